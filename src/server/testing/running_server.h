// A server on the default model on a free loopback port, serving on its own
// thread for the object's lifetime (the server benchmarks).
#pragma once

#include <memory>
#include <thread>

#include "agent/model.h"
#include "server/server.h"

namespace needle::server::testing {

struct RunningServer {
  explicit RunningServer(ServerOptions o) {
    o.port = 0;
    server = std::make_unique<Server>(Model::Default(), o);
    port = server->Bind();
    thread = std::thread([this] { server->Run(); });
  }
  ~RunningServer() {
    server->Stop();
    thread.join();
  }
  std::unique_ptr<Server> server;
  int port = 0;
  std::thread thread;
};

}  // namespace needle::server::testing
