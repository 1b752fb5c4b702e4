// The HTTP client of runtime/http/http_client.hpp under the tests' namespace.
#pragma once

#include "runtime/http/http_client.hpp"

namespace darcy::test {

using runtime::http_body;
using runtime::http_exchange;
using runtime::http_request_text;
using runtime::http_status;

} // namespace darcy::test
