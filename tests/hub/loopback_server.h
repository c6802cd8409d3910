// A tiny HTTP/1.1 server on 127.0.0.1 for the Hub tests: serves canned answers per path,
// honours Range, can cut a body short once (to test resume), and records every request.
// One connection at a time, "Connection: close"; the thread stops in the destructor.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace oxi::test {

class LoopbackServer {
 public:
  struct Request {
    std::string method;
    std::string target;                          // path and query as sent
    std::string path;                            // without the query
    std::map<std::string, std::string> headers;  // names in lowercase
    std::string header(const std::string& name) const;
  };

  struct Response {
    int status = 200;
    std::string body;
    std::vector<std::pair<std::string, std::string>> headers;
    bool honour_range = true;  // false: answer 200 with the whole body even to a Range request
  };

  LoopbackServer();
  ~LoopbackServer();
  LoopbackServer(const LoopbackServer&) = delete;
  LoopbackServer& operator=(const LoopbackServer&) = delete;

  uint16_t port() const { return port_; }
  // "http://<host>:<port>"; any 127.0.0.1 name reaches this server ("localhost" too).
  std::string url(const std::string& host = "127.0.0.1") const;

  // Answers requests for `path` (query ignored). Unknown paths get a 404 JSON error.
  void serve(const std::string& path, Response response);
  void serve(const std::string& path, std::string body) {
    serve(path, Response{200, std::move(body), {}, true});
  }
  void redirect(const std::string& path, const std::string& location, int status = 302);
  // The next answer for `path` sends its headers and only `body_bytes` of the body, then
  // closes the connection.
  void drop_once(const std::string& path, size_t body_bytes);

  std::vector<Request> requests() const;
  size_t count(const std::string& path) const;
  void clear_requests();

 private:
  void loop();
  void handle(int fd);

  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  mutable std::mutex mutex_;
  std::map<std::string, Response> routes_;
  std::map<std::string, size_t> drops_;
  std::vector<Request> requests_;
  std::thread thread_;
};

}  // namespace oxi::test
