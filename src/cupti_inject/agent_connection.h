// SPDX-License-Identifier: Apache-2.0
// The flusher's connection to the agent is the injected libraries' shared one (ipc/); this
// header keeps its names in this library's namespace.
#ifndef WARPSCOPE_CUPTI_INJECT_AGENT_CONNECTION_H_
#define WARPSCOPE_CUPTI_INJECT_AGENT_CONNECTION_H_

#include "ipc/agent_connection.h"

namespace warpscope::cupti_inject {

using ::warpscope::ipc::AgentConnection;
using ::warpscope::ipc::MessageSink;
using ::warpscope::ipc::ReconnectBackoff;

}  // namespace warpscope::cupti_inject

#endif  // WARPSCOPE_CUPTI_INJECT_AGENT_CONNECTION_H_
