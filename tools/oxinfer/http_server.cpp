#include "tools/oxinfer/http_server.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

#include "lib/core/error.h"

namespace oxi::cli {
namespace {

constexpr size_t kMaxHeaderBytes = 64 * 1024;
constexpr size_t kMaxBodyBytes = 16 * 1024 * 1024;
constexpr int kReadTimeoutMs = 10000;  // a client that stops sending mid-request
constexpr int kIdleTimeoutMs = 5000;   // a kept-alive connection without a next request
constexpr int kPollStepMs = 200;       // how often a waiting connection looks at the stop
constexpr int kSendTimeoutS = 30;      // a client that stops reading the reply
// Browsers' pages may call the server (its preflight OPTIONS requests get these too).
constexpr const char* kCorsHeaders =
    "Access-Control-Allow-Origin: *\r\nAccess-Control-Allow-Methods: GET, POST, OPTIONS\r\n"
    "Access-Control-Allow-Headers: *\r\n";

const char* reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 413:
      return "Payload Too Large";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    default:
      return "Status";
  }
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Reads more of the request into `buffer`; false at the end of the stream, an error or a
// client that sends nothing for kReadTimeoutMs.
bool read_more(int fd, std::string& buffer) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, kReadTimeoutMs) <= 0) return false;
  char chunk[16384];
  const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
  if (n <= 0) return false;
  buffer.append(chunk, static_cast<size_t>(n));
  return true;
}

}  // namespace

std::string HttpRequest::query_value(const std::string& name) const {
  for (size_t at = 0; at <= query.size();) {
    const size_t end = std::min(query.find('&', at), query.size());
    const std::string pair = query.substr(at, end - at);
    const size_t eq = pair.find('=');
    if (pair.substr(0, eq) == name) return eq == std::string::npos ? "" : pair.substr(eq + 1);
    at = end + 1;
  }
  return "";
}

std::string HttpRequest::header(const std::string& lower_name) const {
  const auto it = headers.find(lower_name);
  return it == headers.end() ? std::string() : it->second;
}

bool HttpResponse::write_all(std::string_view data) {
  while (!failed_ && !data.empty()) {
    const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      failed_ = true;
      break;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return !failed_;
}

void HttpResponse::send(int status, std::string_view content_type, std::string_view body) {
  if (started_) return;
  started_ = true;
  std::string head = "HTTP/1.1 " + std::to_string(status) + " " + reason(status) + "\r\n";
  head.append("Content-Type: ").append(content_type).append("\r\n");
  head.append("Content-Length: ").append(std::to_string(body.size())).append("\r\n");
  head.append(kCorsHeaders);
  head.append(keep_alive_ ? "Connection: keep-alive\r\nKeep-Alive: timeout=5\r\n\r\n"
                          : "Connection: close\r\n\r\n");
  if (write_all(head)) write_all(body);
}

void HttpResponse::begin_stream(int status, std::string_view content_type) {
  if (started_) return;
  started_ = true;
  keep_alive_ = false;
  std::string head = "HTTP/1.1 " + std::to_string(status) + " " + reason(status) + "\r\n";
  head.append("Content-Type: ").append(content_type).append("\r\n");
  head.append("Cache-Control: no-cache\r\n").append(kCorsHeaders);
  head.append("Connection: close\r\n\r\n");
  write_all(head);
}

bool HttpResponse::write(std::string_view data) {
  return write_all(data);
}

HttpServer::HttpServer(const std::string& host, uint16_t port) {
  const std::string where = host + ":" + std::to_string(port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0 || !found)
    throw Error(where, "cannot resolve the host");
  fd_ = ::socket(found->ai_family, found->ai_socktype, found->ai_protocol);
  const int yes = 1;
  if (fd_ >= 0) ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  const bool bound =
      fd_ >= 0 && ::bind(fd_, found->ai_addr, found->ai_addrlen) == 0 && ::listen(fd_, 16) == 0;
  const int error = errno;
  ::freeaddrinfo(found);
  if (!bound) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    throw Error(where, std::string("cannot listen: ") + std::strerror(error));
  }
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port
                                           : reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
}

HttpServer::~HttpServer() {
  if (fd_ >= 0) ::close(fd_);
}

void HttpServer::serve(const HttpHandler& handler, const std::function<bool()>& stop,
                       size_t max_connections) {
  std::mutex mutex;
  std::condition_variable done;
  size_t active = 0;
  while (!stop()) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 200) <= 0) continue;
    const int client = ::accept(fd_, nullptr, nullptr);
    if (client < 0) continue;
    {
      std::lock_guard lock(mutex);
      if (active >= max_connections) {
        HttpResponse busy(client);
        busy.send(503, "text/plain", "too many connections\n");
        ::close(client);
        continue;
      }
      ++active;
    }
    std::thread([&, client] {
      handle(client, handler);  // NOLINT: the threads end before serve() returns
      ::close(client);
      std::lock_guard lock(mutex);
      --active;
      done.notify_all();
    }).detach();
  }
  stopping_ = true;  // kept-alive connections close instead of waiting for a next request
  std::unique_lock lock(mutex);
  done.wait(lock, [&] { return active == 0; });
}

void HttpServer::handle(int fd, const HttpHandler& handler) const {
  // A client that stops reading fails the writes after a while (and so cancels its turn)
  // instead of holding the engine, and the server's shutdown, forever.
  const timeval send_timeout{kSendTimeoutS, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &send_timeout, sizeof send_timeout);
  std::string buffer;  // what came and is not yet a request handled (the next may be in it)
  for (bool first = true;; first = false) {
    if (!first && buffer.empty()) {  // a kept-alive connection: wait for the next request
      int idle_ms = 0;
      pollfd p{fd, POLLIN, 0};
      while (!stopping_ && idle_ms < kIdleTimeoutMs && ::poll(&p, 1, kPollStepMs) == 0)
        idle_ms += kPollStepMs;
      if (stopping_ || idle_ms >= kIdleTimeoutMs || !read_more(fd, buffer)) return;
    }
    if (!handle_one(fd, buffer, handler)) return;
  }
}

bool HttpServer::handle_one(int fd, std::string& buffer, const HttpHandler& handler) {
  HttpResponse refusal(fd);  // errors before the handler close the connection
  size_t header_end = std::string::npos;
  while ((header_end = buffer.find("\r\n\r\n")) == std::string::npos) {
    if (buffer.size() > kMaxHeaderBytes) {
      refusal.send(431, "text/plain", "request headers too large\n");
      return false;
    }
    if (!read_more(fd, buffer)) return false;
  }
  if (header_end > kMaxHeaderBytes) {
    refusal.send(431, "text/plain", "request headers too large\n");
    return false;
  }
  HttpRequest request;
  const std::string head = buffer.substr(0, header_end);
  size_t line_end = head.find("\r\n");
  const std::string request_line = head.substr(0, line_end);
  const size_t sp1 = request_line.find(' '), sp2 = request_line.rfind(' ');
  if (sp1 == std::string::npos || sp2 == sp1) {
    refusal.send(400, "text/plain", "malformed request line\n");
    return false;
  }
  request.method = request_line.substr(0, sp1);
  request.path = request_line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string version = request_line.substr(sp2 + 1);
  if (const size_t q = request.path.find('?'); q != std::string::npos) {
    request.query = request.path.substr(q + 1);
    request.path.resize(q);
  }
  while (line_end != std::string::npos && line_end < head.size()) {
    const size_t next = head.find("\r\n", line_end + 2);
    const std::string line = head.substr(line_end + 2, next - line_end - 2);
    line_end = next;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string value = line.substr(colon + 1);
    const size_t first = value.find_first_not_of(" \t");
    value = first == std::string::npos ? "" : value.substr(first);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.pop_back();
    request.headers[lower(line.substr(0, colon))] = value;
  }
  if (!request.header("transfer-encoding").empty()) {
    refusal.send(400, "text/plain", "chunked request bodies are not supported\n");
    return false;
  }
  size_t length = 0;
  if (const std::string cl = request.header("content-length"); !cl.empty()) {
    if (cl.size() > 12 || cl.find_first_not_of("0123456789") != std::string::npos) {
      refusal.send(400, "text/plain", "bad Content-Length\n");
      return false;
    }
    length = std::stoull(cl);
  }
  if (length > kMaxBodyBytes) {
    refusal.send(413, "text/plain", "request body too large\n");
    return false;
  }
  const size_t body_start = header_end + 4;
  while (buffer.size() - body_start < length)
    if (!read_more(fd, buffer)) return false;
  request.body = buffer.substr(body_start, length);
  buffer.erase(0, body_start + length);  // a next request sent at once stays
  // HTTP/1.1 keeps the connection unless told to close; HTTP/1.0 closes unless told to keep it.
  const std::string connection = lower(request.header("connection"));
  const bool keep_alive =
      version == "HTTP/1.1" ? connection != "close" : connection == "keep-alive";
  HttpResponse response(fd, keep_alive);
  handler(request, response);
  if (!response.started()) response.send(500, "text/plain", "no response\n");
  return response.kept_alive();
}

}  // namespace oxi::cli
