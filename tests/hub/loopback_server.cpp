#include "tests/hub/loopback_server.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <optional>
#include <stdexcept>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace oxi::test {

namespace {

constexpr size_t kMaxRequestBytes = 64 * 1024;

// Closes a socket descriptor when it goes out of scope.
struct SocketGuard {
  int fd;
  ~SocketGuard() {
    if (fd >= 0) ::close(fd);
  }
};

std::string lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

std::string trim(const std::string& text) {
  const size_t begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return "";
  return text.substr(begin, text.find_last_not_of(" \t\r\n") - begin + 1);
}

bool send_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t sent = ::send(fd, data, size, MSG_NOSIGNAL);
    if (sent <= 0) return false;
    data += sent;
    size -= static_cast<size_t>(sent);
  }
  return true;
}

const char* reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 206:
      return "Partial Content";
    case 301:
      return "Moved Permanently";
    case 302:
      return "Found";
    case 307:
      return "Temporary Redirect";
    case 401:
      return "Unauthorized";
    case 404:
      return "Not Found";
    case 416:
      return "Range Not Satisfiable";
    default:
      return "Status";
  }
}

// "bytes=N-" or "bytes=N-M" -> N (M is ignored: the client only asks open ranges).
std::optional<size_t> range_start(const std::string& value) {
  if (value.rfind("bytes=", 0) != 0) return std::nullopt;
  try {
    return static_cast<size_t>(std::stoull(value.substr(6)));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

std::string LoopbackServer::Request::header(const std::string& name) const {
  const auto it = headers.find(lowercase(name));
  return it == headers.end() ? "" : it->second;
}

LoopbackServer::LoopbackServer() {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) throw std::runtime_error("socket() failed");
  const int yes = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;  // the kernel picks a free port
  socklen_t length = sizeof(address);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      ::listen(listen_fd_, 16) != 0 ||
      ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    ::close(listen_fd_);
    throw std::runtime_error("cannot listen on 127.0.0.1");
  }
  port_ = ntohs(address.sin_port);
  thread_ = std::thread([this] { loop(); });
}

LoopbackServer::~LoopbackServer() {
  stop_ = true;
  thread_.join();
  ::close(listen_fd_);
}

std::string LoopbackServer::url(const std::string& host) const {
  return "http://" + host + ":" + std::to_string(port_);
}

void LoopbackServer::serve(const std::string& path, Response response) {
  const std::lock_guard lock(mutex_);
  routes_[path] = std::move(response);
}

void LoopbackServer::redirect(const std::string& path, const std::string& location, int status) {
  serve(path, Response{status, "redirecting", {{"Location", location}}, true});
}

void LoopbackServer::drop_once(const std::string& path, size_t body_bytes) {
  const std::lock_guard lock(mutex_);
  drops_[path] = body_bytes;
}

std::vector<LoopbackServer::Request> LoopbackServer::requests() const {
  const std::lock_guard lock(mutex_);
  return requests_;
}

size_t LoopbackServer::count(const std::string& path) const {
  const std::lock_guard lock(mutex_);
  return static_cast<size_t>(std::count_if(requests_.begin(), requests_.end(),
                                           [&](const Request& r) { return r.path == path; }));
}

void LoopbackServer::clear_requests() {
  const std::lock_guard lock(mutex_);
  requests_.clear();
}

void LoopbackServer::loop() {
  // Polls with a short timeout so the destructor's stop flag is seen promptly.
  while (!stop_) {
    pollfd waiting{listen_fd_, POLLIN, 0};
    if (::poll(&waiting, 1, 50) <= 0) continue;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    SocketGuard guard{fd};
    const timeval timeout{5, 0};  // a silent client cannot hold the server
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
    handle(fd);
  }
}

void LoopbackServer::handle(int fd) {
  std::string raw;
  char chunk[4096];
  while (raw.find("\r\n\r\n") == std::string::npos && raw.size() < kMaxRequestBytes) {
    const ssize_t got = ::recv(fd, chunk, sizeof(chunk), 0);
    if (got <= 0) return;
    raw.append(chunk, static_cast<size_t>(got));
  }
  Request request;
  size_t line_end = raw.find("\r\n");
  const std::string request_line = raw.substr(0, line_end);
  const size_t space1 = request_line.find(' ');
  const size_t space2 = request_line.find(' ', space1 + 1);
  if (space1 == std::string::npos || space2 == std::string::npos) return;
  request.method = request_line.substr(0, space1);
  request.target = request_line.substr(space1 + 1, space2 - space1 - 1);
  request.path = request.target.substr(0, request.target.find('?'));
  for (size_t start = line_end + 2; start < raw.size();) {
    line_end = raw.find("\r\n", start);
    if (line_end == std::string::npos || line_end == start) break;
    const std::string line = raw.substr(start, line_end - start);
    const size_t colon = line.find(':');
    if (colon != std::string::npos) {
      request.headers[lowercase(trim(line.substr(0, colon)))] = trim(line.substr(colon + 1));
    }
    start = line_end + 2;
  }

  Response response{404, R"({"error":"Repository not found"})", {}, true};
  std::optional<size_t> drop;
  {
    const std::lock_guard lock(mutex_);
    requests_.push_back(request);
    if (auto route = routes_.find(request.path); route != routes_.end()) response = route->second;
    if (auto it = drops_.find(request.path); it != drops_.end()) {
      drop = it->second;
      drops_.erase(it);
    }
  }

  std::string body = response.body;
  int status = response.status;
  std::vector<std::pair<std::string, std::string>> headers = response.headers;
  const std::optional<size_t> start = range_start(request.header("range"));
  if (status == 200 && start && response.honour_range) {
    const size_t total = body.size();
    if (*start >= total) {
      status = 416;
      headers.emplace_back("Content-Range", "bytes */" + std::to_string(total));
      body.clear();
    } else {
      status = 206;
      headers.emplace_back("Content-Range", "bytes " + std::to_string(*start) + "-" +
                                                std::to_string(total - 1) + "/" +
                                                std::to_string(total));
      body = body.substr(*start);
    }
  }
  std::string head = "HTTP/1.1 " + std::to_string(status) + " " + reason(status) + "\r\n";
  for (const auto& [name, value] : headers) head += name + ": " + value + "\r\n";
  head += "Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n";
  if (!send_all(fd, head.data(), head.size())) return;
  const size_t send_bytes = drop ? std::min(*drop, body.size()) : body.size();
  send_all(fd, body.data(), send_bytes);
  ::shutdown(fd, SHUT_RDWR);
}

}  // namespace oxi::test
