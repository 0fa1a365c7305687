// SPDX-License-Identifier: Apache-2.0
#include "support/self_signed_cert.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdio>

namespace warpscope::test {
namespace {

bool AddExtension(X509* cert, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (ext == nullptr) {
    return false;
  }
  const bool ok = X509_add_ext(cert, ext, -1) == 1;
  X509_EXTENSION_free(ext);
  return ok;
}

}  // namespace

bool MakeSelfSignedCert(const std::string& cert_path, const std::string& key_path) {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* cert = X509_new();
  bool ok = key != nullptr && cert != nullptr;
  if (ok) {
    X509_set_version(cert, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
    X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
    X509_gmtime_adj(X509_getm_notAfter(cert), 24 * 3600);
    X509_set_pubkey(cert, key);
    X509_NAME* name = X509_get_subject_name(cert);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>("127.0.0.1"), -1, -1, 0);
    X509_set_issuer_name(cert, name);
    ok = AddExtension(cert, NID_basic_constraints, "critical,CA:TRUE") &&
         AddExtension(cert, NID_subject_alt_name, "IP:127.0.0.1") &&
         X509_sign(cert, key, EVP_sha256()) > 0;
  }
  if (ok) {
    FILE* c = std::fopen(cert_path.c_str(), "w");
    FILE* k = std::fopen(key_path.c_str(), "w");
    ok = c != nullptr && k != nullptr && PEM_write_X509(c, cert) == 1 &&
         PEM_write_PrivateKey(k, key, nullptr, nullptr, 0, nullptr, nullptr) == 1;
    if (c != nullptr) {
      std::fclose(c);
    }
    if (k != nullptr) {
      std::fclose(k);
    }
  }
  X509_free(cert);
  EVP_PKEY_free(key);
  return ok;
}

}  // namespace warpscope::test
