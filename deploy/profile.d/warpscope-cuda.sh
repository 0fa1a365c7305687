# warpscope: profile the CUDA applications of every login shell with the injected CUPTI library
# (docs/cuda-profiler.md). It talks to the local agent over /run/warpscope/cupti.sock and does
# nothing when no agent runs. Off for one job: WARPSCOPE_CUDA_PROFILER=0 before starting it;
# off for the machine: remove this file. An application's own CUDA_INJECTION64_PATH is kept.
# WARPSCOPE_CUPTI_INJECTION_LIBRARY: the library's path where warpscope is installed elsewhere
# (as for `warpscope profile`; WARPSCOPE_CUPTI_LIBRARY is the libcupti that library loads).
_warpscope_lib=${WARPSCOPE_CUPTI_INJECTION_LIBRARY:-/usr/lib/warpscope/libwarpscope_cupti.so}
if [ "${WARPSCOPE_CUDA_PROFILER:-1}" != "0" ] && [ -z "${CUDA_INJECTION64_PATH:-}" ] &&
  [ -r "$_warpscope_lib" ]; then
  CUDA_INJECTION64_PATH=$_warpscope_lib
  export CUDA_INJECTION64_PATH
fi
unset _warpscope_lib
