// SPDX-License-Identifier: Apache-2.0
#include "model/xid.h"

namespace warpscope::model {

std::string_view XidDescription(uint64_t xid) {
  switch (xid) {
    case 13:
      return "Graphics Engine Exception";
    case 31:
      return "GPU memory page fault";
    case 32:
      return "Invalid or corrupted push buffer stream";
    case 43:
      return "GPU stopped processing";
    case 45:
      return "Preemptive cleanup, due to previous errors";
    case 48:
      return "Double Bit ECC Error";
    case 61:
      return "Internal micro-controller breakpoint/warning";
    case 62:
      return "Internal micro-controller halt";
    case 63:
      return "ECC page retirement or row remapping recording event";
    case 64:
      return "ECC page retirement or row remapper recording failure";
    case 68:
      return "Video processor exception";
    case 69:
      return "Graphics Engine class error";
    case 74:
      return "NVLink Error";
    case 79:
      return "GPU has fallen off the bus";
    case 92:
      return "High single-bit ECC error rate";
    case 94:
      return "Contained ECC error";
    case 95:
      return "Uncontained ECC error";
    case 119:
      return "GSP RPC timeout";
    case 120:
      return "GSP error";
    case 999:
      return "Unknown XID";
    default:
      return {};
  }
}

}  // namespace warpscope::model
