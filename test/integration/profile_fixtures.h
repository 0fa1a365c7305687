// SPDX-License-Identifier: Apache-2.0
// One CPU and one GPU window profile of one Python training process, built by the agent's own
// builders (the CPU profiler's CpuWindow, the CUDA profiler's ProfileBuilder) from fixed inputs:
// what the frame-kind round trip test and the web UI's browser test post to a server.
//
//   CPU (kind "cpu"; thread `pid` "python3", thread `pid + 1` "DataLoader"):
//     python3 -> train.py:train_step -> warpscope_fixture_matmul (native) -> do_syscall_64
//                                                              30 samples of 10 ms
//     python3 -> loader.py:next_batch -> warpscope_fixture_decode_jpeg     10 samples of 10 ms
//   GPU (kind "gpu"; labels device, stream, nvtx):
//     python3 -> train.py:train_step -> cudaLaunchKernel -> gemm<float>   (4 ms of GPU time;
//        -> [sass] ... -> [stall] long_scoreboard (PC samples)             device 0, stream 7,
//                                                                          nvtx "forward")
//     ... -> cudaLaunchKernel -> flash_attn_bwd_kernel    (2 ms; device 1, stream 9, "backward")
//     ... -> cudaLaunchKernel -> elementwise_add_kernel   (0.5 ms; device 0, stream 8, no range)
//     python3 -> [memcpy HtoD]                            (1 ms; device 0)
#ifndef WARPSCOPE_TEST_INTEGRATION_PROFILE_FIXTURES_H_
#define WARPSCOPE_TEST_INTEGRATION_PROFILE_FIXTURES_H_

#include <cstdint>

#include "profiling/window_profile.h"

namespace warpscope::test {

// The pid of both profiles: this process's (the CPU profiler symbolizes its native frames in
// this binary), renamed /usr/bin/python3.
profiling::WindowProfile FixtureCpuWindow(int64_t start_ns, int64_t end_ns);
profiling::WindowProfile FixtureGpuWindow(int64_t start_ns, int64_t end_ns);

}  // namespace warpscope::test

#endif  // WARPSCOPE_TEST_INTEGRATION_PROFILE_FIXTURES_H_
