#include "runtime/cluster/cluster_secret.hpp"

#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "compute/hash.hpp"
#include "messages/error.hpp"

namespace darcy::runtime {

namespace {

std::string& client_credential_storage() {
  static std::string credential;
  return credential;
}

} // namespace

caf::expected<std::string> read_secret_file(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0)
    return make_error(errc::invalid_config, "secret file " + path + " does not exist");
  if ((info.st_mode & (S_IRWXG | S_IRWXO)) != 0)
    return make_error(errc::invalid_config,
                      "secret file " + path + " is readable by others: chmod 600 it");
  std::ifstream in{path};
  std::stringstream text;
  if (!(text << in.rdbuf()))
    return make_error(errc::invalid_config, "cannot read secret file " + path);
  auto secret = text.str();
  auto first = secret.find_first_not_of(" \t\r\n");
  if (first == std::string::npos)
    return make_error(errc::invalid_config, "secret file " + path + " is empty");
  auto last = secret.find_last_not_of(" \t\r\n");
  return secret.substr(first, last - first + 1);
}

std::string credential_of(const std::string& secret) {
  if (secret.empty())
    return {};
  // Four chained 64-bit hashes: 256 bits that do not reveal the secret itself.
  std::string result;
  uint64_t h = compute::hash_key(secret);
  for (int i = 0; i < 4; ++i) {
    h = compute::mix64(h, compute::hash_key(secret + static_cast<char>('a' + i)));
    char part[17];
    std::snprintf(part, sizeof part, "%016llx", static_cast<unsigned long long>(h));
    result += part;
  }
  return result;
}

bool same_credential(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

void set_client_credential(std::string credential) {
  client_credential_storage() = std::move(credential);
}

const std::string& client_credential() {
  return client_credential_storage();
}

} // namespace darcy::runtime
