#include "util/text.h"

#include <doctest/doctest.h>

using cc::util::looks_secret;
using cc::util::plural;

TEST_CASE("text: plural says one thing in the singular (launch said \"1 ranks on 1 hosts\")") {
  CHECK(plural(1, "rank", "ranks") == "1 rank");
  CHECK(plural(0, "rank", "ranks") == "0 ranks");
  CHECK(plural(4, "job directory", "job directories") == "4 job directories");
}

TEST_CASE("text: looks_secret knows the usual names of secrets, in any case") {
  for (const char* name : {"HF_TOKEN", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD", "PGPASSWD",
                           "api_key", "GIT_CREDENTIALS", "AUTH_HEADER", "SSH_PRIVATE",
                           "SESSION_COOKIE", "DB_PWD", "PASSPHRASE", "HASH_SALT"}) {
    CAPTURE(name);
    CHECK(looks_secret(name));
  }
  for (const char* name : {"PATH", "HOME", "OMP_NUM_THREADS", "CLUSTERCOMM_TIMEOUT_MS",
                           "PYTHONPATH", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES"}) {
    CAPTURE(name);
    CHECK_FALSE(looks_secret(name));
  }
}
