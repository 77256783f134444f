#include "arrays.h"

#include <string>

namespace ccpy {
namespace {

using cc::comm::DataType;
namespace dl = nb::dlpack;

// numpy, imported at first use and never released (module-lifetime objects).
struct Numpy {
  nb::object empty, ndarray, dtype, uint16;
};
const Numpy& numpy() {
  static const Numpy* np = [] {
    nb::module_ m = nb::module_::import_("numpy");
    return new Numpy{m.attr("empty"), m.attr("ndarray"), m.attr("dtype"), m.attr("uint16")};
  }();
  return *np;
}

// ml_dtypes.bfloat16, or an ImportError naming the package.
nb::object bfloat16_dtype() {
  static nb::object* bf16 = nullptr;
  if (bf16 == nullptr) {
    nb::object m;
    try {
      m = nb::module_::import_("ml_dtypes");
    } catch (nb::python_error& e) {
      if (!e.matches(PyExc_ImportError)) throw;
      throw nb::import_error(
          "bfloat16 arrays are numpy arrays of ml_dtypes.bfloat16, and the ml_dtypes package is "
          "not installed: pip install ml_dtypes (or clustercomm[bfloat16])");
    }
    bf16 = new nb::object(numpy().dtype(m.attr("bfloat16")));
  }
  return *bf16;
}

std::optional<DataType> from_dlpack(dl::dtype t, bool bf16_view) {
  if (t.lanes != 1) return std::nullopt;
  if (bf16_view) return DataType::kBF16;
  switch (static_cast<dl::dtype_code>(t.code)) {
    case dl::dtype_code::Float:
      if (t.bits == 32) return DataType::kF32;
      if (t.bits == 64) return DataType::kF64;
      if (t.bits == 16) return DataType::kF16;
      return std::nullopt;
    case dl::dtype_code::Bfloat:
      if (t.bits == 16) return DataType::kBF16;
      return std::nullopt;
    case dl::dtype_code::Int:
      if (t.bits == 8) return DataType::kI8;
      if (t.bits == 16) return DataType::kI16;
      if (t.bits == 32) return DataType::kI32;
      if (t.bits == 64) return DataType::kI64;
      return std::nullopt;
    case dl::dtype_code::UInt:
      if (t.bits == 8) return DataType::kU8;
      if (t.bits == 16) return DataType::kU16;
      if (t.bits == 32) return DataType::kU32;
      if (t.bits == 64) return DataType::kU64;
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

std::string dlpack_name(dl::dtype t) {
  std::string prefix;
  switch (static_cast<dl::dtype_code>(t.code)) {
    case dl::dtype_code::Int:
      prefix = "int";
      break;
    case dl::dtype_code::UInt:
      prefix = "uint";
      break;
    case dl::dtype_code::Float:
      prefix = "float";
      break;
    case dl::dtype_code::Bfloat:
      prefix = "bfloat";
      break;
    case dl::dtype_code::Complex:
      prefix = "complex";
      break;
    case dl::dtype_code::Bool:
      return "bool";
    default:
      prefix = "dlpack-code-" + std::to_string(t.code) + "-";
      break;
  }
  std::string s = prefix + std::to_string(t.bits);
  if (t.lanes != 1) s += "x" + std::to_string(t.lanes);
  return s;
}

const char* kSupported =
    "float32, float64, float16, bfloat16, int8, int16, int32, int64, uint8, uint16, uint32, "
    "uint64";

std::string describe(nb::handle obj) {
  std::string s = py_str(nb::type_name(obj.type()));
  if (nb::hasattr(obj, "dtype")) s += " of dtype " + py_str(obj.attr("dtype"));
  return s;
}

// A numpy array of ml_dtypes.bfloat16 (its dtype's name is "bfloat16").
bool is_numpy_bf16(nb::handle obj) {
  if (!nb::isinstance(obj, numpy().ndarray)) return false;
  return py_str(obj.attr("dtype").attr("name")) == "bfloat16";
}

template <class View>
void fill(Array& a, const View& v, const char* name, bool bf16_view, bool any_dtype) {
  if (v.device_type() != nb::device::cpu::value) {
    throw nb::value_error((std::string(name) + ": the array is not in CPU memory (DLPack device " +
                           std::to_string(v.device_type()) +
                           "); clustercomm sends host memory: copy it to the CPU first")
                              .c_str());
  }
  a.type = from_dlpack(v.dtype(), bf16_view);
  a.dl_type = v.dtype();
  a.bf16_view = bf16_view;
  if (!a.type && !any_dtype) {
    throw nb::type_error((std::string(name) + ": dtype " + a.dtype_name() +
                          " is not supported (supported: " + kSupported + ")")
                             .c_str());
  }
  a.shape.resize(v.ndim());
  size_t count = 1;
  for (size_t i = 0; i < v.ndim(); ++i) {
    a.shape[i] = v.shape(i);
    count *= v.shape(i);
  }
  // C order: the last index moves fastest (dimensions of extent 1 may have any stride).
  const int64_t* strides = v.stride_ptr();
  if (strides != nullptr && count > 1) {
    int64_t want = 1;
    for (size_t i = v.ndim(); i-- > 0;) {
      if (a.shape[i] != 1 && strides[i] != want) {
        throw nb::value_error((std::string(name) + ": the array is not C-contiguous (shape " +
                               shape_str(a.shape) +
                               "); pass numpy.ascontiguousarray(...) or a contiguous copy")
                                  .c_str());
      }
      want *= static_cast<int64_t>(a.shape[i]);
    }
  }
  a.data = const_cast<void*>(static_cast<const void*>(v.data()));
  a.count = count;
  a.bytes = count * v.itemsize();
}

}  // namespace

std::string Array::dtype_name() const {
  return bf16_view ? "bfloat16" : dlpack_name(dl_type);
}

bool Array::overlaps(const Array& o) const {
  if (bytes == 0 || o.bytes == 0) return false;
  const char* a0 = static_cast<const char*>(data);
  const char* b0 = static_cast<const char*>(o.data);
  return a0 < b0 + o.bytes && b0 < a0 + bytes;
}

Array as_array(nb::handle obj, const char* name, Access access, bool any_dtype) {
  Array a;
  a.obj = nb::borrow(obj);
  nb::handle src = obj;
  nb::object viewed;
  bool bf16_view = false;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (access == Access::kWrite) {
      if (nb::try_cast(src, a.write_view, false)) {
        fill(a, a.write_view, name, bf16_view, any_dtype);
        return a;
      }
    } else if (nb::try_cast(src, a.read_view, false)) {
      fill(a, a.read_view, name, bf16_view, any_dtype);
      return a;
    }
    if (attempt == 0 && is_numpy_bf16(obj)) {
      viewed = obj.attr("view")(numpy().uint16);
      src = viewed;
      bf16_view = true;
      continue;
    }
    break;
  }
  if (access == Access::kWrite && nb::try_cast(src, a.read_view, false)) {
    throw nb::value_error((std::string(name) +
                           ": the array is read-only; the result is written into it, so pass "
                           "a writable array")
                              .c_str());
  }
  throw nb::type_error((std::string(name) +
                        ": expected a C-contiguous CPU array (numpy, or anything with "
                        "__dlpack__ or the buffer protocol) of a supported dtype (" +
                        kSupported + "), got " + describe(obj))
                           .c_str());
}

const char* numpy_name(DataType type) {
  switch (type) {
    case DataType::kF32:
      return "float32";
    case DataType::kF64:
      return "float64";
    case DataType::kF16:
      return "float16";
    case DataType::kBF16:
      return "bfloat16";
    case DataType::kI8:
      return "int8";
    case DataType::kI16:
      return "int16";
    case DataType::kI32:
      return "int32";
    case DataType::kI64:
      return "int64";
    case DataType::kU8:
      return "uint8";
    case DataType::kU16:
      return "uint16";
    case DataType::kU32:
      return "uint32";
    case DataType::kU64:
      return "uint64";
  }
  return "?";
}

namespace {

nb::tuple shape_tuple(const std::vector<size_t>& shape) {
  nb::list l;
  for (size_t d : shape) l.append(d);
  return nb::tuple(l);
}

Array wrap_new(nb::object arr, const char* name) {
  Array a = as_array(arr, name, Access::kWrite, true);
  a.obj = std::move(arr);
  return a;
}

}  // namespace

Array new_array(const std::vector<size_t>& shape, DataType type) {
  static nb::object* dtypes[12] = {};
  const auto i = static_cast<size_t>(type);
  if (dtypes[i] == nullptr) {
    dtypes[i] = new nb::object(type == DataType::kBF16 ? bfloat16_dtype()
                                                       : numpy().dtype(numpy_name(type)));
  }
  return wrap_new(numpy().empty(shape_tuple(shape), *dtypes[i]), "the result");
}

Array new_array(const std::vector<size_t>& shape, nb::handle dtype, const char* name) {
  nb::object dt;
  if (nb::isinstance<nb::str>(dtype) && (py_str(dtype) == "bfloat16" || py_str(dtype) == "bf16")) {
    dt = bfloat16_dtype();
  } else {
    try {
      dt = numpy().dtype(dtype);
    } catch (nb::python_error& e) {
      throw nb::type_error((std::string(name) + ": not a dtype: " + e.what()).c_str());
    }
  }
  return wrap_new(numpy().empty(shape_tuple(shape), dt), name);
}

std::string shape_str(const std::vector<size_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

namespace {

// PyObject_Str or PyObject_Repr of obj as UTF-8 (see py_str).
std::string text_of(nb::handle obj, PyObject* (*convert)(PyObject*)) {
  PyObject* s = convert(obj.ptr());
  if (s == nullptr) {
    PyErr_Clear();
    const char* type = Py_TYPE(obj.ptr())->tp_name;
    return std::string("<unprintable ") + (type != nullptr ? type : "object") + ">";
  }
  PyObject* b = PyUnicode_AsEncodedString(s, "utf-8", "backslashreplace");
  Py_DECREF(s);
  if (b == nullptr) {
    PyErr_Clear();
    return "<unprintable>";
  }
  std::string out(PyBytes_AS_STRING(b), static_cast<size_t>(PyBytes_GET_SIZE(b)));
  Py_DECREF(b);
  return out;
}

}  // namespace

std::string py_str(nb::handle obj) {
  return text_of(obj, PyObject_Str);
}

std::string py_repr(nb::handle obj) {
  return text_of(obj, PyObject_Repr);
}

std::string as_str(nb::handle obj, const std::string& name, bool secret) {
  if (!PyUnicode_Check(obj.ptr())) {
    throw nb::type_error(
        (name + ": expected a str, got " + py_str(nb::type_name(obj.type()))).c_str());
  }
  Py_ssize_t size = 0;
  const char* utf8 = PyUnicode_AsUTF8AndSize(obj.ptr(), &size);
  if (utf8 == nullptr) {
    PyErr_Clear();
    throw nb::value_error(
        (name + ": " + (secret ? std::string("the value") : "'" + py_str(obj) + "'") +
         " cannot be encoded as UTF-8 (it holds a lone surrogate, as text decoded with "
         "errors='surrogateescape' does): pass text that is valid Unicode")
            .c_str());
  }
  return std::string(utf8, static_cast<size_t>(size));
}

std::optional<std::vector<std::string>> as_str_list(nb::handle obj, const std::string& name) {
  if (obj.is_none()) return std::nullopt;
  if (!nb::isinstance<nb::list>(obj) && !nb::isinstance<nb::tuple>(obj)) {
    throw nb::type_error(
        (name + ": expected a list of str, got " + py_str(nb::type_name(obj.type()))).c_str());
  }
  std::vector<std::string> out;
  size_t i = 0;
  for (nb::handle e : obj) out.push_back(as_str(e, name + "[" + std::to_string(i++) + "]"));
  return out;
}

long long as_int(nb::handle obj, const char* name, long long lo, long long hi) {
  if (!PyIndex_Check(obj.ptr())) {
    throw nb::type_error((std::string(name) + ": expected an int, got " +
                          py_str(nb::type_name(obj.type())))
                             .c_str());
  }
  const nb::object i = nb::steal(PyNumber_Index(obj.ptr()));
  if (!i.is_valid()) throw nb::python_error();
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
  if (v == -1 && PyErr_Occurred()) throw nb::python_error();
  if (overflow != 0 || v < lo || v > hi) {
    throw nb::value_error((std::string(name) + ": " + py_str(i) + " is not in [" +
                           std::to_string(lo) + ", " + std::to_string(hi) + "]")
                              .c_str());
  }
  return v;
}

std::vector<size_t> as_shape(nb::handle obj, const char* name) {
  std::vector<size_t> shape;
  auto bad = [&] {
    return nb::value_error((std::string(name) +
                            ": expected an int >= 0 or a sequence of them, got " +
                            py_repr(obj))
                               .c_str());
  };
  auto dim = [&](nb::handle d) {
    if (!PyIndex_Check(d.ptr())) throw bad();
    const Py_ssize_t v = PyNumber_AsSsize_t(d.ptr(), PyExc_OverflowError);
    if (v == -1 && PyErr_Occurred()) throw nb::python_error();
    if (v < 0) throw bad();
    shape.push_back(static_cast<size_t>(v));
  };
  if (PyIndex_Check(obj.ptr())) {
    dim(obj);
  } else if (nb::isinstance<nb::tuple>(obj) || nb::isinstance<nb::list>(obj)) {
    for (nb::handle d : obj) dim(d);
  } else {
    throw nb::type_error(
        (std::string(name) + ": expected an int or a tuple of ints, got " + describe(obj)).c_str());
  }
  return shape;
}

}  // namespace ccpy
