#!/bin/sh
# warpscope for Slurm jobs: a TaskProlog (slurm.conf: TaskProlog=/etc/slurm/warpscope-task-prolog.sh)
# whose "export NAME=value" lines Slurm sets in each task's environment, so that every CUDA
# application of a job is profiled by the node's warpscope agent and tagged with its job.
# Off for one job: sbatch --export=ALL,WARPSCOPE_CUDA_PROFILER=0 ...
# (docs/deploy.md, "A Slurm cluster").
lib=${WARPSCOPE_CUPTI_INJECTION_LIBRARY:-/usr/lib/warpscope/libwarpscope_cupti.so}
if [ "${WARPSCOPE_CUDA_PROFILER:-1}" = "0" ] || [ ! -r "$lib" ]; then
  exit 0
fi
if [ -z "${CUDA_INJECTION64_PATH:-}" ]; then
  echo "export CUDA_INJECTION64_PATH=$lib"
fi
