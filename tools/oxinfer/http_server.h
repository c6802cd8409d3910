// A minimal HTTP/1.1 server for `oxinfer serve`: one request a connection (Connection: close),
// each connection on a thread of its own (at most max_connections at once; more are answered
// 503), so that quick requests (/health) are answered while a long one runs; the handler
// serializes what must not run together (the engine). Requests larger than their limits are
// answered 413 / 431 without reaching the handler.
//
//   HttpServer server("127.0.0.1", 8080);
//   server.serve([](const HttpRequest& req, HttpResponse& res) { res.send(200, "text/plain", "ok");
//   },
//                [] { return stop_requested; });
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

namespace oxi::cli {

struct HttpRequest {
  std::string method;                          // "GET", "POST", ...
  std::string path;                            // without the query string
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  std::string header(const std::string& lower_name) const;
};

// What a handler writes back: send() once, or begin_stream() and write() pieces (server-sent
// events); a write to a client that has gone returns false.
class HttpResponse {
 public:
  explicit HttpResponse(int fd) : fd_(fd) {}
  void send(int status, std::string_view content_type, std::string_view body);
  void begin_stream(int status, std::string_view content_type);
  bool write(std::string_view data);
  bool started() const { return started_; }

 private:
  bool write_all(std::string_view data);
  int fd_;
  bool started_ = false;
  bool failed_ = false;
};

using HttpHandler = std::function<void(const HttpRequest&, HttpResponse&)>;

class HttpServer {
 public:
  // Binds and listens (port 0: any free one, see port()); throws oxi::Error naming host:port.
  HttpServer(const std::string& host, uint16_t port);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  uint16_t port() const { return port_; }
  // Accepts and handles connections until `stop` returns true (checked at least every 200 ms),
  // then waits for the connections being handled.
  void serve(const HttpHandler& handler, const std::function<bool()>& stop,
             size_t max_connections = 32);

 private:
  static void handle(int fd, const HttpHandler& handler);
  int fd_ = -1;
  uint16_t port_ = 0;
};

}  // namespace oxi::cli
