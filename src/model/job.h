// SPDX-License-Identifier: Apache-2.0
// The distributed job a process belongs to, as its launcher wrote it into the process's
// environment (/proc/<pid>/environ: the environment it was started with; later setenv calls do
// not show there). Ranks of one job on different hosts share `id`, so the server can compare
// them whatever host they run on (docs/design/data-model.md, "Job attributes").
//
// Launchers recognised, in this order:
//   torchrun / torch.distributed.elastic: TORCHELASTIC_RUN_ID (the rendezvous id; "none", its
//     default, is no id), RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR; launcher "torchelastic"
//   Slurm (srun): SLURM_JOB_ID, SLURM_PROCID, SLURM_LOCALID, SLURM_NTASKS; launcher "slurm"
// torchrun under Slurm is "torchelastic", with the Slurm job id when the rendezvous id is
// "none". Pure functions; no I/O.
#ifndef WARPSCOPE_MODEL_JOB_H_
#define WARPSCOPE_MODEL_JOB_H_

#include <string>
#include <string_view>

#include "model/labels.h"

namespace warpscope::model {

struct JobIdentity {
  std::string launcher;     // "torchelastic", "slurm"; "" when the process is in no known job
  std::string id;           // the job (run) id; may be "" when the launcher gives none
  std::string rank;         // global rank of the process, decimal
  std::string local_rank;   // rank on its host
  std::string world_size;   // processes in the job
  std::string master_addr;  // torch's rendezvous host
  bool empty() const { return launcher.empty(); }
  friend bool operator==(const JobIdentity&, const JobIdentity&) = default;
};

// Reads the launcher's variables out of an environ file's text: NUL-separated KEY=VALUE
// entries (a last entry without NUL counts). Values longer than 128 bytes are cut.
JobIdentity ParseJobEnviron(std::string_view environ);

// Sets the job.* attributes (attr::kJob*) of the non-empty fields.
void SetJobAttributes(const JobIdentity& job, Labels& attributes);

}  // namespace warpscope::model

#endif  // WARPSCOPE_MODEL_JOB_H_
