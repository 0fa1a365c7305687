// SPDX-License-Identifier: Apache-2.0
// A CUDA application stand-in for the real-cubin end-to-end test (real_cubin_e2e_test.cc): it
// loads CUDA_INJECTION64_PATH and calls InitializeInjection as the driver does, then, through the
// fake libcupti's hooks, creates a context, loads the real cubin given on the command line (built
// by ptxas from axpy.ptx), launches its kernel once and queues PC samples at real instruction
// offsets of that cubin, keyed by the CRC cuptiGetCubinCrc gives for it (the function the
// injected library uses for the module). It exits once the profiler opened a second sampling
// window (the first one was collected).
//   real_cubin_app CUBIN FUNCTION OFFSET:STALL:SAMPLES...
// Exit status 0 when every step behaved; non-zero with a message on stderr otherwise.
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "cupti/abi.h"
#include "fakes/cupti/fake_cupti.h"

extern "C" warpscope::cupti::abi::CUptiResult cuptiGetCubinCrc(
    warpscope::cupti::abi::CUpti_GetCubinCrcParams* params);

namespace {

namespace abi = ::warpscope::cupti::abi;

void* const kContext = reinterpret_cast<void*>(0x2000);

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s CUBIN FUNCTION OFFSET:STALL:SAMPLES...\n", argv[0]);
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  const std::string cubin((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (cubin.empty()) {
    std::fprintf(stderr, "real_cubin_app: cannot read %s\n", argv[1]);
    return 2;
  }
  const char* function = argv[2];
  const char* inject = std::getenv("CUDA_INJECTION64_PATH");
  void* lib = inject != nullptr ? dlopen(inject, RTLD_NOW | RTLD_LOCAL) : nullptr;
  auto init =
      lib != nullptr ? reinterpret_cast<int (*)()>(dlsym(lib, "InitializeInjection")) : nullptr;
  if (init == nullptr || init() != 1) {
    std::fprintf(stderr, "real_cubin_app: InitializeInjection of %s failed\n",
                 inject != nullptr ? inject : "(unset)");
    return 3;
  }
  FakeCuptiContextCreated(kContext);
  FakeCuptiModuleLoaded(kContext, 1, cubin.data(), cubin.size());
  const uint32_t corr =
      FakeCuptiLaunch(abi::kDomainRuntimeApi, abi::kCbidCudaLaunchKernel, function, kContext);
  FakeCuptiAddKernel(corr, function, 0, 7, 1'000'000'000, 1'000'004'000, 0, 0);

  abi::CUpti_GetCubinCrcParams p{};
  p.size = sizeof(p);
  p.cubin = cubin.data();
  p.cubinSize = cubin.size();
  if (cuptiGetCubinCrc(&p) != abi::kSuccess) {
    std::fprintf(stderr, "real_cubin_app: cuptiGetCubinCrc failed\n");
    return 4;
  }
  for (int i = 3; i < argc; ++i) {
    unsigned long long offset = 0;
    unsigned stall = 0;
    unsigned samples = 0;
    if (std::sscanf(argv[i], "%llx:%u:%u", &offset, &stall, &samples) != 3) {
      std::fprintf(stderr, "real_cubin_app: bad sample %s\n", argv[i]);
      return 2;
    }
    FakeCuptiAddPcSample(kContext, p.cubinCrc, function, offset, stall, samples);
  }
  // Bounded wait until the profiler opened a second window: the first one was collected.
  for (int i = 0; i < 1000 && FakeCuptiPcSamplingStarts() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (FakeCuptiPcSamplingStarts() < 2) {
    std::fprintf(stderr, "real_cubin_app: PC sampling windows did not open\n");
    return 5;
  }
  std::printf("done ok\n");
  return 0;
}
