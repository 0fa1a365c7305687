// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_MODEL_XID_H_
#define WARPSCOPE_MODEL_XID_H_

#include <cstdint>
#include <string_view>

namespace warpscope::model {

// Short text for the common NVIDIA XID error codes ("GPU has fallen off the bus" for 79), as an
// operator reads them in dmesg; "" for codes not in the table.
std::string_view XidDescription(uint64_t xid);

}  // namespace warpscope::model

#endif  // WARPSCOPE_MODEL_XID_H_
