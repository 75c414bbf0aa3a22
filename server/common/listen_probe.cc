#include "server/common/listen_probe.h"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace shotstream {

absl::Status ProbeListen(const std::string& host_port) {
  const size_t colon = host_port.rfind(':');
  int port = -1;
  if (colon == std::string::npos || !absl::SimpleAtoi(host_port.substr(colon + 1), &port) ||
      port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat(host_port, ": expected HOST:PORT with a port number"));
  }
  absl::string_view host = absl::string_view(host_port).substr(0, colon);
  if (absl::ConsumePrefix(&host, "[")) absl::ConsumeSuffix(&host, "]");
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const std::string host_s(host);
  const std::string port_s = std::to_string(port);
  if (::getaddrinfo(host_s.empty() ? nullptr : host_s.c_str(), port_s.c_str(), &hints,
                    &found) != 0 ||
      found == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(host_port, ": host does not resolve"));
  }
  int err = 0;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      err = errno;
      continue;
    }
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));  // as gRPC does
    const bool bound = ::bind(fd, a->ai_addr, a->ai_addrlen) == 0;
    if (!bound) err = errno;
    ::close(fd);
    if (bound) {
      ::freeaddrinfo(found);
      return absl::OkStatus();
    }
  }
  ::freeaddrinfo(found);
  if (err == EADDRINUSE) {
    return absl::UnavailableError(absl::StrCat(host_port, ": address in use"));
  }
  return absl::UnavailableError(absl::StrCat(host_port, ": cannot listen: ",
                                             std::strerror(err)));
}

}  // namespace shotstream
