// SPDX-License-Identifier: Apache-2.0
// `warpscope top --server URL --host H`: the requests that make one snapshot from a server's
// query API (docs/api.md) and the snapshot from their answers. No HTTP here: the caller sends.
#ifndef WARPSCOPE_TOP_REMOTE_SNAPSHOT_H_
#define WARPSCOPE_TOP_REMOTE_SNAPSHOT_H_

#include <string>
#include <vector>

#include "base/status.h"
#include "top/snapshot.h"

namespace warpscope::top {

// The GET paths (with query strings) of one refresh, in the order SnapshotFromServer wants
// their bodies: the host's summary over the last two minutes, the top GPU processes by memory,
// their SM and CPU utilization, the host's CPU count, its findings, its GPUs' PCIe rates.
std::vector<std::string> RemoteRequests(const std::string& host);

// The snapshot from the bodies of RemoteRequests(host), in order. Processes are those the host
// reported within 30 s of its newest process sample; findings those not resolved, firing first.
// NVLink rates are not asked for, nor the GPU of each process (the server's top answers are
// per process). Errors (kInvalidArgument) name the answer that is not
// the JSON expected.
base::Result<Snapshot> SnapshotFromServer(const std::string& host,
                                          const std::vector<std::string>& bodies);

}  // namespace warpscope::top

#endif  // WARPSCOPE_TOP_REMOTE_SNAPSHOT_H_
