// A minimal HTTP/1.1 server for `oxinfer serve`: each connection on a thread of its own (at
// most max_connections at once; more are answered 503), so that quick requests (/health) are
// answered while a long one runs; the handler serializes what must not run together (the
// engine). Connections are kept alive between requests as HTTP/1.1 has them by default (not
// after "Connection: close", an HTTP/1.0 request without "Connection: keep-alive", a streamed
// reply, or a request refused before the handler), until the client sends nothing for 5 s;
// requests sent back to back are answered in turn. Requests larger than their limits are
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
  std::string query;                           // after '?' (not decoded), empty: none
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  std::string header(const std::string& lower_name) const;
  // The value of `name` in the query ("a=1&b=2"), not decoded; empty: not there.
  std::string query_value(const std::string& name) const;
};

// What a handler writes back: send() once, or begin_stream() and write() pieces (server-sent
// events); a write to a client that has gone returns false.
class HttpResponse {
 public:
  // keep_alive: the connection may carry another request after this reply.
  explicit HttpResponse(int fd, bool keep_alive = false) : fd_(fd), keep_alive_(keep_alive) {}
  void send(int status, std::string_view content_type, std::string_view body);
  // A reply of unknown length: the connection closes after it.
  void begin_stream(int status, std::string_view content_type);
  bool write(std::string_view data);
  bool started() const { return started_; }
  // The reply went out whole and the connection stays open for the next request.
  bool kept_alive() const { return started_ && keep_alive_ && !failed_; }

 private:
  bool write_all(std::string_view data);
  int fd_;
  bool keep_alive_;
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
  // Answers the connection's requests until it closes, idles or the server stops.
  void handle(int fd, const HttpHandler& handler) const;
  // Reads one request from `buffer` (and the socket) and answers it; whether the connection
  // stays open for another.
  static bool handle_one(int fd, std::string& buffer, const HttpHandler& handler);
  int fd_ = -1;
  std::atomic<bool> stopping_{false};
  uint16_t port_ = 0;
};

}  // namespace oxi::cli
