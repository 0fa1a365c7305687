// SPDX-License-Identifier: Apache-2.0
#include "model/job.h"

#include <map>

#include "model/entity.h"

namespace warpscope::model {
namespace {

constexpr size_t kMaxValue = 128;

constexpr std::string_view kWanted[] = {
    "TORCHELASTIC_RUN_ID", "RANK",         "LOCAL_RANK",    "WORLD_SIZE",   "MASTER_ADDR",
    "SLURM_JOB_ID",        "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS",
};

bool Wanted(std::string_view key) {
  for (std::string_view w : kWanted) {
    if (w == key) {
      return true;
    }
  }
  return false;
}

std::string Get(const std::map<std::string_view, std::string_view>& env, std::string_view key) {
  auto it = env.find(key);
  return it == env.end() ? std::string() : std::string(it->second.substr(0, kMaxValue));
}

}  // namespace

JobIdentity ParseJobEnviron(std::string_view environ) {
  std::map<std::string_view, std::string_view> env;
  while (!environ.empty()) {
    const size_t end = environ.find('\0');
    std::string_view entry = environ.substr(0, end);
    environ.remove_prefix(end == std::string_view::npos ? environ.size() : end + 1);
    const size_t eq = entry.find('=');
    if (eq == std::string_view::npos || !Wanted(entry.substr(0, eq))) {
      continue;
    }
    env[entry.substr(0, eq)] = entry.substr(eq + 1);  // the last one wins, as getenv's does not
  }
  JobIdentity job;
  const std::string slurm_job = Get(env, "SLURM_JOB_ID");
  if (env.contains("TORCHELASTIC_RUN_ID")) {
    job.launcher = "torchelastic";
    job.id = Get(env, "TORCHELASTIC_RUN_ID");
    if (job.id == "none" || job.id.empty()) {
      job.id = slurm_job;
    }
    job.rank = Get(env, "RANK");
    job.local_rank = Get(env, "LOCAL_RANK");
    job.world_size = Get(env, "WORLD_SIZE");
    job.master_addr = Get(env, "MASTER_ADDR");
  } else if (!slurm_job.empty()) {
    job.launcher = "slurm";
    job.id = slurm_job;
    job.rank = Get(env, "SLURM_PROCID");
    job.local_rank = Get(env, "SLURM_LOCALID");
    job.world_size = Get(env, "SLURM_NTASKS");
  }
  return job;
}

void SetJobAttributes(const JobIdentity& job, Labels& attributes) {
  const std::pair<std::string_view, const std::string*> fields[] = {
      {attr::kJobLauncher, &job.launcher},
      {attr::kJobId, &job.id},
      {attr::kJobRank, &job.rank},
      {attr::kJobLocalRank, &job.local_rank},
      {attr::kJobWorldSize, &job.world_size},
      {attr::kJobMasterAddr, &job.master_addr},
  };
  for (const auto& [key, value] : fields) {
    if (!value->empty()) {
      attributes.Set(key, *value);
    }
  }
}

}  // namespace warpscope::model
