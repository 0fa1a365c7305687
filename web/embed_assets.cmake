# SPDX-License-Identifier: Apache-2.0
# cmake -DASSET_DIR=<dir> -DOUTPUT=<file.cc> -DUI_BUILT=0|1 -P embed_assets.cmake
# Writes a C++ file holding every file under ASSET_DIR as a byte array plus a table sorted by
# path (relative, '/'-separated) with a strong ETag (the first 16 hex digits of the SHA-256).
# The table is what web/assets.h exposes.
if(NOT ASSET_DIR OR NOT OUTPUT)
  message(FATAL_ERROR "embed_assets.cmake needs -DASSET_DIR=<dir> and -DOUTPUT=<file>")
endif()
file(GLOB_RECURSE _files RELATIVE ${ASSET_DIR} ${ASSET_DIR}/*)
list(SORT _files)
if(NOT _files)
  message(FATAL_ERROR "embed_assets.cmake: no files under ${ASSET_DIR}")
endif()

set(_out "// SPDX-License-Identifier: Apache-2.0\n// Embedded web UI assets from ${ASSET_DIR}.\n")
string(APPEND _out "#include <cstddef>\n\n#include \"web/assets.h\"\n\n")
string(APPEND _out "namespace warpscope::web::internal {\nnamespace {\n")
set(_table "")
set(_i 0)
foreach(_f IN LISTS _files)
  file(READ ${ASSET_DIR}/${_f} _hex HEX)
  file(SIZE ${ASSET_DIR}/${_f} _size)
  file(SHA256 ${ASSET_DIR}/${_f} _sha)
  string(SUBSTRING ${_sha} 0 16 _etag)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," _bytes "${_hex}")
  # Break the initializer into lines of 32 bytes so compilers and editors stay happy.
  string(REGEX REPLACE "((0x[0-9a-f][0-9a-f],){32})" "\\1\n" _bytes "${_bytes}")
  # A trailing 0 keeps the array non-empty for empty files; it is not part of the size.
  string(APPEND _out "const unsigned char kData${_i}[] = {\n${_bytes}0};\n")
  string(APPEND _table "    {\"${_f}\", reinterpret_cast<const char*>(kData${_i}), ${_size}, \"${_etag}\"},\n")
  math(EXPR _i "${_i} + 1")
endforeach()
string(APPEND _out "}  // namespace\n\n")
string(APPEND _out "const Asset kAssets[] = {\n${_table}};\n")
string(APPEND _out "const size_t kAssetCount = ${_i};\n")
if(UI_BUILT)
  string(APPEND _out "const bool kUiBuilt = true;\n")
else()
  string(APPEND _out "const bool kUiBuilt = false;\n")
endif()
string(APPEND _out "}  // namespace warpscope::web::internal\n")
# Only touch the output when it changes, so an unchanged bundle does not relink the server.
if(EXISTS ${OUTPUT})
  file(READ ${OUTPUT} _old)
  if(_old STREQUAL _out)
    return()
  endif()
endif()
file(WRITE ${OUTPUT} "${_out}")
