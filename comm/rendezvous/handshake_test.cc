#include "comm/rendezvous/handshake.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/socket.h>

#include <string>
#include <thread>

#include "comm/error.h"

namespace cc::comm {
namespace {

// A connected pair of non-blocking stream sockets.
std::pair<tcp::Fd, tcp::Fd> socket_pair() {
  int sv[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
  for (int fd : sv) {
    const int flags = fcntl(fd, F_GETFL, 0);
    fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  }
  return {tcp::Fd(sv[0]), tcp::Fd(sv[1])};
}

ServerHandshake::State drive(ServerHandshake& s) {
  for (int i = 0; i < 2000; ++i) {
    const auto st = s.step();
    if (st != ServerHandshake::State::kPending) return st;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return ServerHandshake::State::kPending;
}

}  // namespace

TEST_CASE("handshake: the same token passes both ways and carries the hello") {
  auto [a, b] = socket_pair();
  const Deadline d = Clock::now() + std::chrono::seconds(5);
  ServerHandshake server(std::move(b), "token", d);
  std::thread client([&, fd = a.get()] { client_handshake(fd, "token", "hi there", d, "server"); });
  CHECK(drive(server) == ServerHandshake::State::kDone);
  client.join();
  CHECK(server.hello() == "hi there");
}

TEST_CASE("handshake: a wrong token is refused on both sides") {
  auto [a, b] = socket_pair();
  const Deadline d = Clock::now() + std::chrono::seconds(5);
  ServerHandshake server(std::move(b), "token", d);
  bool client_failed = false;
  std::string message;
  std::thread client([&, fd = a.get()] {
    try {
      client_handshake(fd, "other", "hello", d, "server");
    } catch (const Error& e) {
      client_failed = e.kind() == ErrorKind::kAuth;
      message = e.message();
    }
  });
  CHECK(drive(server) == ServerHandshake::State::kFailed);
  server.take_fd().reset();  // closing tells the client
  client.join();
  CHECK(client_failed);
  // Another job's coordinator on the port looks the same: the message sends the operator to
  // rank 0's own error (it could not bind) before the tokens.
  CHECK(message.find("server refused this rank: another job's endpoint is on that port") !=
        std::string::npos);
  CHECK(message.find("look at rank 0's own error first") != std::string::npos);
}

TEST_CASE("handshake: another program on the port is named as one, silent or not") {
  // torchrun / mlx.launch users meet a stale job or a server on the coordinator port
  // (pytorch#126510): a joining rank said only "timed out waiting for the coordinator".
  {
    auto [a, b] = socket_pair();  // b accepts and says nothing (python3 -m http.server, nc -l)
    const Deadline d = Clock::now() + std::chrono::milliseconds(200);
    try {
      client_handshake(a.get(), "token", "hello", d, "the coordinator (rank 0) at 10.0.0.1:32323");
      FAIL("a silent listener passed the handshake");
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::kTimeout);
      CHECK(e.message().starts_with(
          "the coordinator (rank 0) at 10.0.0.1:32323 accepted the connection but never sent "
          "clustercomm's greeting before the timeout: another program may hold that port"));
      CHECK(e.message().find("`ss -ltnp`") != std::string::npos);
    }
  }
  {
    auto [a, b] = socket_pair();  // b answers as a web server does
    const std::string reply = "HTTP/1.0 400 Bad Request\r\nServer: SimpleHTTP/0.6\r\n\r\n";
    REQUIRE(::send(b.get(), reply.data(), reply.size(), 0) == static_cast<ssize_t>(reply.size()));
    const Deadline d = Clock::now() + std::chrono::seconds(5);
    try {
      client_handshake(a.get(), "token", "hello", d, "the coordinator (rank 0) at 10.0.0.1:32323");
      FAIL("a web server passed the handshake");
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::kAuth);
      CHECK(
          e.message().starts_with("the coordinator (rank 0) at 10.0.0.1:32323 is not a "
                                  "clustercomm endpoint (it sent \"HTTP/1.0 400 Bad...\"): "
                                  "another program may hold that port"));
    }
  }
}

TEST_CASE("handshake: a coordinator that does not know the token is another job's") {
  auto [a, b] = socket_pair();
  const Deadline d = Clock::now() + std::chrono::seconds(5);
  ServerHandshake server(std::move(b), "first job", d);
  std::string message;
  std::thread client([&, fd = a.get()] {
    try {
      client_handshake(fd, "second job", "hello", d, "the coordinator (rank 0) at 127.0.0.1:1");
    } catch (const Error& e) {
      message = e.message();
    }
  });
  CHECK(drive(server) == ServerHandshake::State::kFailed);
  server.take_fd().reset();
  client.join();
  CHECK(
      message.starts_with("the coordinator (rank 0) at 127.0.0.1:1 refused this rank: another "
                          "job's coordinator is on that port (e.g. a second launch of the same "
                          "job, whose rank 0 then could not listen there"));
}

}  // namespace cc::comm
