// clustercomm._clustercomm: the nanobind module behind the clustercomm package. One class,
// Communicator, over cc::comm::Communicator (comm/clustercomm.h).
//
// Every call: arguments are checked and results allocated first (errors name the argument,
// nothing is sent), then the comm call runs with the GIL released inside a CallScope (Ctrl-C
// raises KeyboardInterrupt within about 40 ms and breaks the communicator: errors.h). A
// communicator (with the others of its world: split) is used by one thread at a time, as in
// C++: a second thread's call raises RuntimeError instead of racing it.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "arrays.h"
#include "comm/clustercomm.h"
#include "errors.h"

namespace ccpy {
namespace {

using namespace cc::comm;
using nb::arg;

constexpr long long kIntMin = std::numeric_limits<int>::min();
constexpr long long kIntMax = std::numeric_limits<int>::max();

ReduceOp as_op(nb::handle op) {
  // An exact str first, compared without building strings (about 300 instructions a call).
  if (PyUnicode_CheckExact(op.ptr())) {
    for (ReduceOp r : kAllReduceOps) {
      const std::string_view name = to_string(r);  // "sum", ...: literals, NUL-terminated
      if (PyUnicode_CompareWithASCIIString(op.ptr(), name.data()) == 0) return r;
    }
  }
  if (!nb::isinstance<nb::str>(op)) {
    throw nb::type_error(
        ("op: expected one of 'sum', 'prod', 'min', 'max', got " + py_repr(op)).c_str());
  }
  const std::string s = py_str(op);
  const auto parsed =
      s == "sum" || s == "prod" || s == "min" || s == "max" ? parse_reduce_op(s) : std::nullopt;
  if (!parsed) {
    throw nb::value_error(("op: '" + s + "' is not one of 'sum', 'prod', 'min', 'max'").c_str());
  }
  return *parsed;
}

template <class Enum>
Enum pick(const char* name, const std::string& v,
          std::initializer_list<std::pair<const char*, Enum>> choices) {
  std::string all;
  for (const auto& [k, e] : choices) {
    if (v == k) return e;
    all += (all.empty() ? "'" : ", '") + std::string(k) + "'";
  }
  throw nb::value_error((std::string(name) + ": '" + v + "' is not one of " + all).c_str());
}

long long in_range(const char* name, long long v, long long lo, long long hi) {
  if (v < lo || v > hi) {
    throw nb::value_error((std::string(name) + ": " + std::to_string(v) + " is not in [" +
                           std::to_string(lo) + ", " + std::to_string(hi) + "]")
                              .c_str());
  }
  return v;
}

class PyCommunicator {
 public:
  explicit PyCommunicator(Config config) {
    config.interrupted = interrupt_check;
    CallScope scope;
    try {
      nb::gil_scoped_release nogil;
      comm_ = std::make_unique<Communicator>(config);
    } catch (const Error& e) {
      scope.rethrow(e);
    }
  }
  ~PyCommunicator() {
    if (!comm_) return;
    std::unique_ptr<Communicator> c = std::move(comm_);
#if PY_VERSION_HEX >= 0x030D0000
    const bool finalizing = Py_IsFinalizing();
#else
    const bool finalizing = _Py_IsFinalizing();
#endif
    if (finalizing) return;        // c closes with the GIL held: nothing else runs then
    nb::gil_scoped_release nogil;  // waits for the peers (up to the timeout)
    c.reset();
  }

  // A communicator split from `parent`'s world: it shares the world's busy flag.
  PyCommunicator(std::unique_ptr<Communicator> comm, const PyCommunicator& parent)
      : comm_(std::move(comm)), busy_(parent.busy_) {}

  static Config from_env_config() {
    try {
      return config_from_env();
    } catch (const Error& e) {
      raise_comm_error(e);
    }
  }

  int rank() {
    return live().rank();
  }
  int size() {
    return live().size();
  }
  std::string transport() {
    return live().transport_name();
  }
  bool broken() {
    return live().broken();
  }
  bool closed() const {
    return !comm_;
  }
  std::string topology() {
    return live().topology() == Topology::kRing ? "ring" : "mesh";
  }
  nb::dict tuning() {
    const cc::comm::Tuning& t = live().tuning();
    nb::dict d;
    d["one_shot_max_bytes"] = t.one_shot_max_bytes;
    d["chunk_bytes"] = t.chunk_bytes;
    d["window_chunks"] = t.window_chunks;
    d["spin_us"] = static_cast<long long>(t.spin.count());
    d["shm_single_copy_min"] = t.shm_single_copy_min;
    return d;
  }

  void close() {
    if (!comm_) return;
    Busy busy(*this);
    std::unique_ptr<Communicator> c = std::move(comm_);  // closed for every other thread now
    nb::gil_scoped_release nogil;  // waits for the peers to close too (up to the timeout)
    c.reset();
  }

  nb::object all_reduce(nb::handle x, nb::handle op, nb::handle out) {
    live();
    const ReduceOp rop = as_op(op);
    Array in = as_array(x, "x", Access::kRead);
    Array res = output(out, in.shape, *in.type, in, "x");
    if (res.data != in.data && res.overlaps(in)) {
      throw nb::value_error("out: overlaps x without being x itself (in place: out=x)");
    }
    run([&](Communicator& cm) { cm.all_reduce(in.data, res.data, in.count, *in.type, rop); });
    return res.obj;
  }

  nb::object reduce_scatter(nb::handle x, nb::handle op, nb::handle out) {
    Communicator& c = live();
    const ReduceOp rop = as_op(op);
    Array in = as_array(x, "x", Access::kRead);
    const auto n = static_cast<size_t>(c.size());
    if (in.shape.empty() || in.shape[0] % n != 0) {
      throw nb::value_error(("x: shape " + shape_str(in.shape) +
                             ": its first dimension must be a multiple of the world size (" +
                             std::to_string(n) + "); rank r receives block r of it")
                                .c_str());
    }
    std::vector<size_t> shape = in.shape;
    shape[0] /= n;
    Array res = output(out, shape, *in.type, in, "x");
    const size_t count = in.count / n;
    const char* own =
        static_cast<const char*>(in.data) +
        static_cast<size_t>(c.rank()) * count * (in.bytes / std::max<size_t>(in.count, 1));
    if (res.data != own && res.overlaps(in)) {
      throw nb::value_error(
          "out: overlaps x without being this rank's block of it (in place: "
          "out=x[rank*k:(rank+1)*k] "
          "with k = x.shape[0] // size)");
    }
    run([&](Communicator& cm) { cm.reduce_scatter(in.data, res.data, count, *in.type, rop); });
    return res.obj;
  }

  nb::object all_gather(nb::handle x, nb::handle out) {
    Communicator& c = live();
    Array in = as_array(x, "x", Access::kRead);
    const auto n = static_cast<size_t>(c.size());
    std::vector<size_t> shape = in.shape;
    if (shape.empty()) {
      shape.push_back(n);
    } else {
      shape[0] *= n;
    }
    Array res = output(out, shape, *in.type, in, "x");
    const char* own = static_cast<const char*>(res.data) + static_cast<size_t>(c.rank()) * in.bytes;
    if (in.data != own && res.overlaps(in)) {
      throw nb::value_error(
          "x: overlaps out without being this rank's block of it (in place: "
          "x=out[rank*k:(rank+1)*k] with k = x.shape[0])");
    }
    run([&](Communicator& cm) { cm.all_gather(in.data, res.data, in.count, *in.type); });
    return res.obj;
  }

  nb::object broadcast(nb::handle x, nb::handle root_arg, nb::handle out) {
    Communicator& c = live();
    const int root = check_rank("root", root_arg, c, true);
    Array in = as_array(x, "x", Access::kRead);
    Array res = output(out, in.shape, *in.type, in, "x");
    if (res.data != in.data && res.overlaps(in)) {
      throw nb::value_error("out: overlaps x without being x itself (in place: out=x)");
    }
    run([&](Communicator& cm) { cm.broadcast(in.data, res.data, in.count, *in.type, root); });
    return res.obj;
  }

  void send(nb::handle x, nb::handle peer_arg) {
    Communicator& c = live();
    const int peer = check_rank("peer", peer_arg, c, false);
    Array in = as_array(x, "x", Access::kRead, true);
    run([&](Communicator& cm) { cm.send(in.data, in.bytes, peer); });
  }

  nb::object recv_into(nb::handle out, nb::handle peer_arg) {
    Communicator& c = live();
    const int peer = check_rank("peer", peer_arg, c, false);
    Array res = as_array(out, "out", Access::kWrite, true);
    run([&](Communicator& cm) { cm.recv(res.data, res.bytes, peer); });
    return res.obj;
  }

  nb::object recv_new(nb::handle shape, nb::handle dtype, nb::handle peer_arg) {
    Communicator& c = live();
    const int peer = check_rank("peer", peer_arg, c, false);
    Array res = new_array(as_shape(shape, "shape"), dtype, "dtype");
    run([&](Communicator& cm) { cm.recv(res.data, res.bytes, peer); });
    return res.obj;
  }

  void barrier() {
    run([&](Communicator& cm) { cm.barrier(); });
  }

  void release_buffer(nb::handle x) {
    Communicator& c = live();
    Array in = as_array(x, "x", Access::kRead, true);
    c.release_buffer(in.data, in.bytes);
  }

  nb::object all_to_all(nb::handle x, nb::handle out) {
    Communicator& c = live();
    Array in = as_array(x, "x", Access::kRead);
    const auto n = static_cast<size_t>(c.size());
    if (in.shape.empty() || in.shape[0] % n != 0) {
      throw nb::value_error(("x: shape " + shape_str(in.shape) +
                             ": its first dimension must be a multiple of the size (" +
                             std::to_string(n) + "); block p goes to rank p")
                                .c_str());
    }
    Array res = output(out, in.shape, *in.type, in, "x");
    if (res.data != in.data && res.overlaps(in)) {
      throw nb::value_error("out: overlaps x without being x itself (in place: out=x)");
    }
    run([&](Communicator& cm) { cm.all_to_all(in.data, res.data, in.count / n, *in.type); });
    return res.obj;
  }

  nb::object split(nb::handle color_arg, nb::handle key_arg) {
    const int color = static_cast<int>(as_int(color_arg, "color", kIntMin, kIntMax));
    const int key = static_cast<int>(as_int(key_arg, "key", kIntMin, kIntMax));
    std::unique_ptr<Communicator> child;
    run([&](Communicator& cm) { child = std::make_unique<Communicator>(cm.split(color, key)); });
    if (!child->valid()) return nb::none();
    return nb::cast(std::make_unique<PyCommunicator>(std::move(child), *this));
  }

  std::string repr() {
    if (!comm_) return "<clustercomm.Communicator (closed)>";
    return "<clustercomm.Communicator rank " + std::to_string(comm_->rank()) + " of " +
           std::to_string(comm_->size()) + ", " + comm_->transport_name() +
           (comm_->broken() ? ", broken" : "") + ">";
  }

 private:
  // One thread at a time (comm/clustercomm.h, "Threads").
  struct Busy {
    explicit Busy(PyCommunicator& c) : self(c) {
      if (self.busy_->exchange(true)) {
        throw std::runtime_error(
            "clustercomm: this communicator is in a call on another thread (or another of its "
            "world: split); a world and the communicators split from it are used by one thread "
            "at a time");
      }
    }
    ~Busy() { *self.busy_ = false; }
    PyCommunicator& self;
  };

  Communicator& live() {
    if (!comm_) throw nb::value_error("the communicator is closed");
    return *comm_;
  }

  // A rank argument (root, peer): an int that is a rank of this world (and not this rank's own
  // unless self_ok); ValueError naming it otherwise.
  static int check_rank(const char* name, nb::handle obj, Communicator& c, bool self_ok) {
    const long long r = as_int(obj, name, LLONG_MIN, LLONG_MAX);
    if (r < 0 || r >= c.size() || (!self_ok && r == c.rank())) {
      throw nb::value_error((std::string(name) + ": " + std::to_string(r) + " is not " +
                             (self_ok ? "a rank" : "another rank") + " of this world of size " +
                             std::to_string(c.size()) + " (ranks 0.." +
                             std::to_string(c.size() - 1) + ", this rank is " +
                             std::to_string(c.rank()) + ")")
                                .c_str());
    }
    return static_cast<int>(r);
  }

  // The result array: `out` checked against the shape and type, or a new numpy array.
  static Array output(nb::handle out, const std::vector<size_t>& shape, DataType type,
                      const Array& in, const char* in_name) {
    if (out.is_none()) return new_array(shape, type);
    Array res = as_array(out, "out", Access::kWrite);
    if (*res.type != type) {
      throw nb::type_error(("out: dtype " + res.dtype_name() + " does not match " + in_name +
                            "'s dtype " + in.dtype_name())
                               .c_str());
    }
    if (res.shape != shape) {
      throw nb::value_error(
          ("out: shape " + shape_str(res.shape) + ", expected " + shape_str(shape)).c_str());
    }
    return res;
  }

  // The call itself: this thread's alone, with the GIL released and Ctrl-C watched.
  template <class F>
  void run(F&& call) {
    Busy busy(*this);
    Communicator& c = live();  // not closed by another thread since the arguments were checked
    CallScope scope;
    try {
      nb::gil_scoped_release nogil;
      call(c);
    } catch (const Error& e) {
      scope.rethrow(e);
    }
  }

  std::unique_ptr<Communicator> comm_;
  // Shared by a world and the communicators split from it: together they are used by one
  // thread at a time (comm/clustercomm.h, "Split communicators").
  std::shared_ptr<std::atomic<bool>> busy_ = std::make_shared<std::atomic<bool>>(false);
};

// `devices`: None, or a list of lists of str (this rank's row of the device matrix).
std::optional<std::vector<std::vector<std::string>>> device_rows(nb::handle obj) {
  if (obj.is_none()) return std::nullopt;
  if (!nb::isinstance<nb::list>(obj) && !nb::isinstance<nb::tuple>(obj)) {
    throw nb::type_error(
        ("devices: expected a list of lists of str, got " + py_str(nb::type_name(obj.type())))
            .c_str());
  }
  std::vector<std::vector<std::string>> rows;
  size_t i = 0;
  for (nb::handle row : obj) {
    const std::string name = "devices[" + std::to_string(i++) + "]";
    if (row.is_none()) throw nb::type_error((name + ": expected a list of str, got None").c_str());
    rows.push_back(*as_str_list(row, name));
  }
  return rows;
}

std::vector<std::string> str_list(const std::optional<std::vector<std::string>>& v) {
  return v ? *v : std::vector<std::string>{};
}

Config make_config(int rank, int size, const std::string& coordinator, const std::string& token,
                   long long timeout_ms, const std::optional<std::vector<std::string>>& listen,
                   const std::optional<std::vector<std::string>>& routes, int connections_per_peer,
                   const std::string& topology, const std::string& transport,
                   const std::optional<std::vector<std::vector<std::string>>>& devices,
                   long long ibv_frame_bytes, long long ibv_recv_frames,
                   const std::string& ibv_profile, long long one_shot_max_bytes,
                   long long chunk_bytes, long long window_chunks, long long spin_us,
                   nb::handle ibv_zero_copy, long long shm_single_copy_min) {
  Config c;
  c.rank = rank;
  c.size = size;
  c.coordinator = coordinator;
  c.token = token;
  c.timeout = std::chrono::milliseconds(in_range("timeout_ms", timeout_ms, 1, 1LL << 40));
  c.listen = str_list(listen);
  for (const std::string& e : str_list(routes)) c.routes.push_back(parse_peer_route(e));
  if (!c.routes.empty() && c.routes.size() != static_cast<size_t>(size)) {
    throw nb::value_error(("routes: " + std::to_string(c.routes.size()) +
                           " entries, expected one per rank (" + std::to_string(size) + ")")
                              .c_str());
  }
  c.connections_per_peer =
      static_cast<int>(in_range("connections_per_peer", connections_per_peer, 1, 16));
  c.topology =
      pick<Topology>("topology", topology, {{"mesh", Topology::kMesh}, {"ring", Topology::kRing}});
  c.transport = pick<TransportKind>("transport", transport,
                                    {{"auto", TransportKind::kAuto},
                                     {"tcp", TransportKind::kTcp},
                                     {"verbs", TransportKind::kVerbs},
                                     {"shm", TransportKind::kShm}});
  if (devices) c.devices = *devices;
  const auto fb = static_cast<size_t>(in_range("ibv_frame_bytes", ibv_frame_bytes, 4096, 8 << 20));
  if ((fb & (fb - 1)) != 0) throw nb::value_error("ibv_frame_bytes: must be a power of two");
  c.ibv_frame_bytes = fb;
  c.ibv_recv_frames = static_cast<uint32_t>(in_range("ibv_recv_frames", ibv_recv_frames, 4, 63));
  c.ibv_profile = pick<VerbsProfile>("ibv_profile", ibv_profile,
                                     {{"apple", VerbsProfile::kApple}, {"rc", VerbsProfile::kRc}});
  // None: the platform's default; True/False as before this took a mode (True was cached).
  if (ibv_zero_copy.is_none()) {
    c.ibv_zero_copy.reset();
  } else if (nb::isinstance<nb::bool_>(ibv_zero_copy)) {
    c.ibv_zero_copy = nb::cast<bool>(ibv_zero_copy) ? ZeroCopy::kCached : ZeroCopy::kOff;
  } else if (nb::isinstance<nb::str>(ibv_zero_copy)) {
    c.ibv_zero_copy = pick<ZeroCopy>("ibv_zero_copy", py_str(ibv_zero_copy),
                                     {{"message", ZeroCopy::kPerMessage},
                                      {"cached", ZeroCopy::kCached},
                                      {"off", ZeroCopy::kOff}});
  } else {
    throw nb::type_error(
        "ibv_zero_copy: expected None, \"message\", \"cached\", \"off\" or a bool");
  }
  c.tuning.one_shot_max_bytes =
      static_cast<size_t>(in_range("one_shot_max_bytes", one_shot_max_bytes, 0, 1LL << 40));
  // 0: the transport's default (Tuning::chunk_bytes); else 4 KiB .. 4 GiB.
  c.tuning.chunk_bytes = chunk_bytes == 0 ? 0
                                          : static_cast<size_t>(in_range("chunk_bytes", chunk_bytes,
                                                                         4096, 1LL << 32));
  c.tuning.window_chunks = static_cast<size_t>(in_range("window_chunks", window_chunks, 1, 1024));
  c.tuning.spin = std::chrono::microseconds(in_range("spin_us", spin_us, 0, 10000000));
  // As CLUSTERCOMM_SHM_SINGLE_COPY_MIN: 0 .. 2^40 bytes, 0 off.
  if (shm_single_copy_min < 0) {
    throw nb::value_error(("shm_single_copy_min: " + std::to_string(shm_single_copy_min) +
                           " is negative: give a number of bytes (messages of at least that "
                           "many go by single copy), or 0 for never")
                              .c_str());
  }
  c.tuning.shm_single_copy_min =
      static_cast<size_t>(in_range("shm_single_copy_min", shm_single_copy_min, 0, 1LL << 40));
  return c;
}

constexpr const char* kClassDoc =
    R"(A member of a world of ``size`` ranks (libclustercomm's Communicator).

Construct one per process: ``clustercomm.init()`` from the environment a launcher set
(``clusterctl launch``, or MLX's variables), or ``Communicator(rank=, size=, coordinator=, ...)``
by hand. Construction blocks until every rank has joined (at most ``timeout_ms``).

Every rank must call the same collectives in the same order with the same shapes, dtypes, ops
and roots. Arrays are any C-contiguous CPU array (numpy, or anything with ``__dlpack__`` or the
buffer protocol: MLX, PyTorch, JAX), read in place without a copy. Results are new numpy arrays,
or ``out=`` (written in place, zero copy; ``out=x`` reduces in place). Results are bit-identical
on every rank. The GIL is released during every call.

Errors: argument mistakes raise TypeError (not an array, unsupported or mismatched dtype) or
ValueError (not C-contiguous, read-only ``out``, wrong shape, bad peer/root/op; a str option
UTF-8 cannot hold, such as one with a lone surrogate), naming the argument, before anything is
sent. A failed call raises a ``clustercomm.Error`` subclass
(``TimeoutError``, ``PeerLostError``, ...; ``.ranks`` names the ranks involved) and breaks the
communicator: later calls raise ``BrokenError``. Ctrl-C during a call raises KeyboardInterrupt
within about 40 ms and breaks it too (its peers then get ``PeerLostError``).

Use it as a context manager, or call ``close()``: closing waits (up to the timeout) for the
peers to close, so nothing in flight is lost.)";

}  // namespace
}  // namespace ccpy

NB_MODULE(_clustercomm, m) {
  using namespace ccpy;
  using cc::comm::Config;
  init_main_thread();
  m.attr("__version__") = CLUSTERCOMM_VERSION;
  m.doc() = "libclustercomm bindings; use the clustercomm package.";

  nb::class_<PyCommunicator>(m, "Communicator", kClassDoc)
      .def(
          "__init__",
          // The ints are taken as objects and converted by as_int, so that one out of range
          // (rank=1 << 40) is a ValueError naming it, not "incompatible function arguments".
          // The strings likewise (as_str): one UTF-8 cannot hold (a lone surrogate) or of
          // another type is an error naming the option.
          [](PyCommunicator* self, nb::handle rank, nb::handle size, nb::handle coordinator,
             nb::handle token, nb::handle timeout_ms, nb::handle listen, nb::handle routes,
             nb::handle connections_per_peer, nb::handle topology, nb::handle transport,
             nb::handle devices, nb::handle ibv_frame_bytes, nb::handle ibv_recv_frames,
             nb::handle ibv_profile, nb::handle one_shot_max_bytes, nb::handle chunk_bytes,
             nb::handle window_chunks, nb::handle spin_us, nb::handle ibv_zero_copy,
             nb::handle shm_single_copy_min) {
            const auto i = [](nb::handle v, const char* name) {
              return as_int(v, name, LLONG_MIN, LLONG_MAX);
            };
            const auto small = [](nb::handle v, const char* name) {
              return static_cast<int>(as_int(v, name, kIntMin, kIntMax));
            };
            Config c = make_config(
                small(rank, "rank"), small(size, "size"), as_str(coordinator, "coordinator"),
                as_str(token, "token", /*secret=*/true), i(timeout_ms, "timeout_ms"),
                as_str_list(listen, "listen"), as_str_list(routes, "routes"),
                small(connections_per_peer, "connections_per_peer"), as_str(topology, "topology"),
                as_str(transport, "transport"), device_rows(devices),
                i(ibv_frame_bytes, "ibv_frame_bytes"), i(ibv_recv_frames, "ibv_recv_frames"),
                as_str(ibv_profile, "ibv_profile"), i(one_shot_max_bytes, "one_shot_max_bytes"),
                i(chunk_bytes, "chunk_bytes"), i(window_chunks, "window_chunks"),
                i(spin_us, "spin_us"), ibv_zero_copy,
                i(shm_single_copy_min, "shm_single_copy_min"));
            new (self) PyCommunicator(std::move(c));
          },
          nb::kw_only(), arg("rank") = 0, arg("size") = 1, arg("coordinator") = "",
          arg("token") = "", arg("timeout_ms") = 30000, arg("listen") = nb::none(),
          arg("routes") = nb::none(), arg("connections_per_peer") = 1, arg("topology") = "mesh",
          arg("transport") = "auto", arg("devices") = nb::none(), arg("ibv_frame_bytes") = 65536,
          arg("ibv_recv_frames") = 32, arg("ibv_profile") = "apple",
          arg("one_shot_max_bytes") = 65536, arg("chunk_bytes") = 0, arg("window_chunks") = 8,
          arg("spin_us") = 200, arg("ibv_zero_copy").none() = nb::none(),
          arg("shm_single_copy_min") = 0,
          R"(Joins a world by hand (the fields of C++ cc::comm::Config; comm/README.md has each).

Args:
    rank: this rank, 0 <= rank < size.
    size: world size (1: no peers, no network; collectives copy).
    coordinator: "ip:port" of rank 0's coordinator; needed when size > 1. Rank 0 listens on
        exactly that address ("0.0.0.0:P" for every address).
    token: the job's shared secret; every connection proves it (HMAC-SHA-256). Empty only
        for a world on one host: then every address must be loopback.
    timeout_ms: milliseconds after which start-up fails, and a call fails once nothing has
        moved on this rank's connections for that long (TimeoutError); a long transfer that
        keeps moving is not cut off.
    listen: local "ip:port" addresses to accept peers on (default "0.0.0.0:0", or
        "127.0.0.1:0" for a loopback coordinator).
    routes: one entry per rank, "remote" or "local>remote" ("ip[:port]"): the cable to use
        for that peer (CLUSTERCOMM_PEER_ADDRS).
    connections_per_peer: TCP connections per pair, 1..16 (large messages are striped).
    topology: "mesh" or "ring" (only ring neighbours cabled).
    transport: "auto" (shared memory between the ranks of one host; between hosts RDMA
        verbs when ``devices`` is given and every rank can open them, else TCP), "shm" (shared
        memory in each host or fail, TCP between hosts), "tcp" (TCP only) or "verbs"; the same
        on every rank.
    devices: this rank's row of the MLX device matrix: per peer, the RDMA device names for
        the cable(s) to it ([] for itself).
    ibv_frame_bytes: verbs frame size in bytes, a power of two 4096..8388608.
    ibv_recv_frames: receive frames posted per queue pair, 4..63.
    ibv_profile: "apple" (UC queue pairs) or "rc" (RC queue pairs, Linux NICs).
    one_shot_max_bytes, chunk_bytes, window_chunks, spin_us: tuning (bytes, bytes, chunks,
        microseconds); rank 0's apply job-wide, except spin. chunk_bytes 0: 512 KiB when
        transport is "tcp", else 256 KiB.
    ibv_zero_copy: verbs sends of 256 KiB and more go straight from your arrays instead of
        being copied (CLUSTERCOMM_IBV_ZERO_COPY). "message": each array registered for its
        send and deregistered when it completes (nothing to do for you); "cached" (or True):
        registrations kept, and you call ``release_buffer(x)`` before an array you sent from
        is freed; "off" (or False). None: "message" on Linux, "off" on macOS.
    shm_single_copy_min: shared memory on Linux: collective messages of at least this many
        bytes (0..2**40) are read by the receiver straight out of the sender's array, one copy
        instead of the rings' two (CLUSTERCOMM_SHM_SINGLE_COPY_MIN). 0 (the default): never,
        as it measured slower than the rings on the machines tested (comm/README.md). This
        rank's own value applies to what it sends and receives (ranks need not agree).

Raises:
    ValueError: an option out of range or not one of its choices (named).
    InvalidArgumentError: rank not in the world; no token outside loopback.
    TimeoutError: ranks that never joined (``.ranks``). WorldError: size disagreement or
    duplicate rank. AuthError: wrong token. SystemCallError: bind/socket failed.)")
      .def_static(
          "from_env",
          []() {
            Config c = PyCommunicator::from_env_config();
            return std::make_unique<PyCommunicator>(std::move(c));
          },
          R"(Joins the world the environment describes (C++ Communicator::from_env): the
CLUSTERCOMM_* variables ``clusterctl launch`` sets, or MLX's (MLX_RANK with MLX_HOSTFILE, or
MLX_IBV_DEVICES with MLX_JACCL_COORDINATOR); a world of size 1 when none is set.
Same as ``clustercomm.init()``.

Raises:
    InvalidArgumentError: a malformed variable (named). Otherwise as ``Communicator()``.)")
      .def_prop_ro("rank", &PyCommunicator::rank, "This rank (int), 0 <= rank < size.")
      .def_prop_ro("size", &PyCommunicator::size,
                   "The number of ranks (int): the world's, or a split communicator's.")
      .def_prop_ro("transport", &PyCommunicator::transport,
                   "What the calls run on: \"tcp\", \"verbs (apple profile: UC queue pairs)\", "
                   "\"verbs (rc profile: RC queue pairs)\" or \"none (world size 1)\".")
      .def_prop_ro("topology", &PyCommunicator::topology,
                   "\"mesh\" or \"ring\": the job-wide topology rank 0 chose.")
      .def_prop_ro("tuning", &PyCommunicator::tuning,
                   "The tuning in force (dict of int): one_shot_max_bytes, chunk_bytes, "
                   "window_chunks (rank 0's, job-wide), spin_us and shm_single_copy_min (this "
                   "rank's own); chunk_bytes as chosen when 0 was given (C++ "
                   "Communicator::tuning).")
      .def_prop_ro("broken", &PyCommunicator::broken,
                   "True after a call failed (or was interrupted); every later call raises "
                   "BrokenError.")
      .def_prop_ro("closed", &PyCommunicator::closed, "True after close().")
      .def("close", &PyCommunicator::close,
           R"(Leaves the world: waits (up to the timeout) for the peers to close too, so
nothing in flight is lost; at once when the communicator is broken. Idempotent; later calls
raise ValueError.)")
      .def("__enter__", [](nb::handle self) { return nb::borrow(self); })
      .def(
          "__exit__",
          [](PyCommunicator& self, nb::handle, nb::handle, nb::handle) { self.close(); },
          arg("exc_type").none(), arg("exc").none(), arg("tb").none())
      .def("__repr__", &PyCommunicator::repr)
      .def(
          "all_reduce", &PyCommunicator::all_reduce, arg("x"), arg("op") = "sum",
          arg("out").none() = nb::none(),
          R"(Element-wise reduction over every rank: out[i] = x_0[i] op x_1[i] op ... on every rank.

Args:
    x: array of any shape, dtype float32, float64, float16, bfloat16, int8..int64 or
        uint8..uint64.
    op: "sum", "prod", "min" or "max". float16/bfloat16 reduce in float and round to
        nearest even; integers wrap.
    out: writable C-contiguous array of x's shape and dtype (``out=x``: in place).

Returns:
    ``out``, or a new numpy array of x's shape and dtype.)")
      .def("reduce_scatter", &PyCommunicator::reduce_scatter, arg("x"), arg("op") = "sum",
           arg("out").none() = nb::none(),
           R"(Reduces x over every rank and gives rank r block r of the result.

Args:
    x: array whose first dimension is a multiple of size: blocks of k = x.shape[0] // size
        rows, in rank order.
    op: "sum", "prod", "min" or "max".
    out: array of shape (k, *x.shape[1:]) and x's dtype; ``out=x[rank*k:(rank+1)*k]``
        reduces in place.

Returns:
    ``out``, or a new numpy array of shape (k, *x.shape[1:]).)")
      .def("all_gather", &PyCommunicator::all_gather, arg("x"), arg("out").none() = nb::none(),
           R"(Concatenates every rank's x along the first axis, in rank order, on every rank.

Args:
    x: array; the same shape and dtype on every rank (0-d: the result has shape (size,)).
    out: array of shape (size * x.shape[0], *x.shape[1:]) and x's dtype; x may be this
        rank's block of it (in place).

Returns:
    ``out``, or a new numpy array of that shape.)")
      .def("broadcast", &PyCommunicator::broadcast, arg("x"), arg("root") = 0,
           arg("out").none() = nb::none(),
           R"(Root's x lands on every rank.

Args:
    x: on the root, the data; on the other ranks only its shape and dtype matter (it is
        not read).
    root: the rank whose x is sent.
    out: array of x's shape and dtype; ``out=x`` receives in place.

Returns:
    ``out``, or a new numpy array holding root's x.)")
      .def("send", &PyCommunicator::send, arg("x"), arg("peer"),
           R"(Sends x's bytes (x.nbytes; any dtype) to ``peer``, which must recv the same byte
count. Messages between two ranks arrive in the order sent. Returns once x may be reused.)")
      .def("recv", &PyCommunicator::recv_into, arg("out"), arg("peer"),
           R"(Receives ``peer``'s next send into ``out`` (its nbytes must equal what was sent);
returns ``out``.)")
      .def("recv", &PyCommunicator::recv_new, arg("shape"), arg("dtype"), arg("peer"),
           R"(Receives ``peer``'s next send into a new numpy array of ``shape`` and ``dtype``
(anything numpy.dtype() takes, or "bfloat16"); returns it.)")
      .def("barrier", &PyCommunicator::barrier, "Returns once every rank has entered it.")
      .def("release_buffer", &PyCommunicator::release_buffer, arg("x"),
           R"(With cached zero-copy (``ibv_zero_copy="cached"`` or True, or
CLUSTERCOMM_IBV_ZERO_COPY=1), call this before an array you sent from (or passed to a
collective) is freed: the verbs transport keeps its pages registered, and memory later placed
at the same address would be sent stale. Local (no communication); harmless otherwise.)")
      .def("all_to_all", &PyCommunicator::all_to_all, arg("x"), arg("out").none() = nb::none(),
           R"(Rank r's block p (rows p*k .. p*k+k-1, k = x.shape[0] // size) goes to rank p,
and lands there as block r: the transpose of the blocks over the ranks.

Args:
    x: array whose first dimension is a multiple of size; the same shape and dtype on every
        rank.
    out: array of x's shape and dtype; ``out=x`` exchanges in place.

Returns:
    ``out``, or a new numpy array of x's shape.)")
      .def("split", &PyCommunicator::split, arg("color"), arg("key") = 0,
           R"(Collective: the ranks that pass the same color get a new Communicator of their
own, ranked by (key, rank), as MPI_Comm_split. It reuses this world's connections (no new
socket or queue pair) and has its own message space; a negative color (NO_COLOR) returns
None on that rank. The world and everything split from it share the connections (they close
when the last is closed) and the broken state, and are used by one thread at a time.

Raises:
    InvalidArgumentError: on a ring topology of more than 3 ranks. Otherwise as all_gather.)");
  m.attr("NO_COLOR") = kNoColor;
}
