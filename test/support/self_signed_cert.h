// SPDX-License-Identifier: Apache-2.0
#ifndef WARPSCOPE_TEST_SUPPORT_SELF_SIGNED_CERT_H_
#define WARPSCOPE_TEST_SUPPORT_SELF_SIGNED_CERT_H_

#include <string>

namespace warpscope::test {

// Writes a fresh self-signed certificate for 127.0.0.1/localhost (valid for a day) and its
// private key as PEM files, for TLS tests. Returns false on any OpenSSL or file error.
bool MakeSelfSignedCert(const std::string& cert_path, const std::string& key_path);

}  // namespace warpscope::test

#endif  // WARPSCOPE_TEST_SUPPORT_SELF_SIGNED_CERT_H_
