// SPDX-License-Identifier: Apache-2.0
// Test hooks of the fake libcupti (libwarpscope_fake_cupti.so). The fake implements, in memory,
// the cupti* entry points that libwarpscope_cupti.so calls (declared in cupti/abi.h); these
// extern "C" hooks let a fake CUDA application play the driver's part: fire launch and resource
// callbacks, queue activity records and PC samples. All hooks are thread-safe.
#ifndef WARPSCOPE_TEST_FAKES_CUPTI_FAKE_CUPTI_H_
#define WARPSCOPE_TEST_FAKES_CUPTI_FAKE_CUPTI_H_

#include <cstddef>
#include <cstdint>

extern "C" {

// Makes the next cuptiSubscribe return `result` (e.g. 39, another subscriber holds CUPTI).
void FakeCuptiSetSubscribeResult(int result);

// True when the subscriber enabled the callback.
int FakeCuptiIsCallbackEnabled(int domain, uint32_t cbid);

// Simulates one launch API call on the calling thread: assigns the next correlation id, fires
// the ENTER callback of (domain, cbid) with `symbol`, and for a runtime-domain launch also the
// nested driver cuLaunchKernel ENTER/EXIT (with the same correlation id, or with one of its own
// under WARPSCOPE_FAKE_CUPTI_CORRELATION=distinct), then EXIT. Returns the launch's correlation
// id (the runtime call's), the one its kernel records carry. Callbacks fire only when the
// subscriber enabled that cbid.
uint32_t FakeCuptiLaunch(int domain, uint32_t cbid, const char* symbol, void* context);

// Queues a kernel activity record (CONCURRENT_KERNEL, Kernel10 layout) for the next flush.
// `name` must stay valid for the life of the process (CUPTI shares kernel names the same way).
void FakeCuptiAddKernel(uint32_t correlation_id, const char* name, uint32_t device, uint32_t stream,
                        uint64_t start_ns, uint64_t end_ns, uint32_t graph_id,
                        uint64_t graph_node_id);
void FakeCuptiAddMemcpy(uint32_t correlation_id, uint8_t copy_kind, uint64_t bytes,
                        uint64_t start_ns, uint64_t end_ns);
// A memcpy on (device, stream) (FakeCuptiAddMemcpy: device 0, stream 7).
void FakeCuptiAddMemcpyOn(uint32_t correlation_id, uint8_t copy_kind, uint64_t bytes,
                          uint64_t start_ns, uint64_t end_ns, uint32_t device, uint32_t stream);
void FakeCuptiAddMemset(uint32_t correlation_id, uint64_t bytes, uint64_t start_ns,
                        uint64_t end_ns, uint32_t device, uint32_t stream);
// A MEMORY2 record (Memory4 layout): operation 1 allocation, 2 release; memory_kind as
// CUpti_ActivityMemoryKind (3 device, 2 pinned).
void FakeCuptiAddMemory(int operation, int memory_kind, uint32_t device, uint64_t address,
                        uint64_t bytes, uint64_t timestamp_ns);
// flags: 2 start, 4 end, 1 instantaneous (CUPTI marker flags).
void FakeCuptiAddMarker(uint32_t id, uint32_t flags, uint64_t timestamp_ns, const char* name,
                        uint32_t tid);

// Buffer delivery: records per buffer, and whether buffers are completed in reverse order.
void FakeCuptiSetDelivery(size_t records_per_buffer, int reverse);

// Fires a resource callback: CONTEXT_CREATED (1) with `context`, MODULE_LOADED (6) with a cubin.
void FakeCuptiContextCreated(void* context);
void FakeCuptiModuleLoaded(void* context, uint32_t module_id, const void* cubin, size_t size);

// Queues one PC sample for the context's next cuptiPCSamplingGetData after a Start.
void FakeCuptiAddPcSample(void* context, uint64_t cubin_crc, const char* function,
                          uint64_t pc_offset, uint32_t stall_reason_index, uint32_t samples);
// Number of Start calls seen on any context (duty-cycle windows opened).
int FakeCuptiPcSamplingStarts(void);
// 1 while PC sampling is enabled and started on the context (a window is open), else 0: a
// simulated application queues samples only then, as a GPU samples only then.
int FakeCuptiPcSamplingActive(void* context);
// The stall reason index of a reason named without CUPTI's prefix ("long_scoreboard"), or
// UINT32_MAX when the simulated device has no such reason.
uint32_t FakeCuptiStallReasonIndex(const char* name);
// PC-sampling calls refused for want of a current context or for a wrong record/data size.
int FakeCuptiPcErrors(void);
// What cuptiGetVersion reports from now on (default WARPSCOPE_FAKE_CUPTI_VERSION or 130001).
void FakeCuptiSetVersion(uint32_t version);
// Number of activity records queued but not yet delivered.
size_t FakeCuptiPendingRecords(void);
}

#endif  // WARPSCOPE_TEST_FAKES_CUPTI_FAKE_CUPTI_H_
