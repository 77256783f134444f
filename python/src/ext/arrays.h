// Arrays in and out of the binding: any C-contiguous CPU array through DLPack (__dlpack__:
// numpy, MLX, PyTorch, JAX) or the buffer protocol, seen without a copy; results are new
// numpy arrays. numpy arrays of ml_dtypes.bfloat16 (which numpy cannot export through DLPack)
// are seen through a uint16 view of the same memory.
//
// Errors name the argument: TypeError for something that is not an array or has a type
// comm has no DataType for (or a dtype that does not match), ValueError for an array that
// is not C-contiguous, not in CPU memory, read-only where it is written, or of the wrong
// shape. Nothing is sent when one is raised: every argument is checked before a call starts.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "comm/types.h"

namespace ccpy {

namespace nb = nanobind;
using cc::comm::DataType;

enum class Access { kRead, kWrite };

/// One array as comm sees it, for the length of a call.
struct Array {
  nb::object obj;                 // what to return (the caller's array, or a new numpy one)
  nb::ndarray<nb::ro> read_view;  // keeps the export alive (one of the two is set)
  nb::ndarray<> write_view;
  void* data = nullptr;
  size_t count = 0;  // elements
  size_t bytes = 0;
  std::optional<DataType> type;  // empty: a type comm cannot reduce (only send/recv take it)
  nb::dlpack::dtype dl_type;     // as exported (uint16 for a numpy bfloat16 array)
  bool bf16_view = false;        // a numpy bfloat16 array seen as uint16
  std::vector<size_t> shape;

  bool overlaps(const Array& o) const;
  /// numpy's spelling of the element type: "float32", "bfloat16", "bool". Built only for
  /// error messages (not on every call: it cost about 400 instructions an array).
  std::string dtype_name() const;
};

/// `obj` as an array named `name` in errors. `any_dtype`: accept element types comm has no
/// DataType for (send/recv move bytes).
Array as_array(nb::handle obj, const char* name, Access access, bool any_dtype = false);

/// A new uninitialised numpy array. bfloat16 needs ml_dtypes (ImportError naming it).
Array new_array(const std::vector<size_t>& shape, DataType type);
/// A new numpy array of any numpy dtype (recv(shape, dtype, peer)); `dtype` as numpy.dtype()
/// takes it, or "bfloat16".
Array new_array(const std::vector<size_t>& shape, nb::handle dtype, const char* name);

/// numpy's name of a comm type ("float32", ..., "bfloat16").
const char* numpy_name(DataType type);
/// "(2, 3)", as numpy prints a shape.
std::string shape_str(const std::vector<size_t>& shape);
/// A shape argument: an int or a sequence of ints >= 0.
std::vector<size_t> as_shape(nb::handle obj, const char* name);

/// str(obj) and repr(obj) as UTF-8 for messages, never null and never throwing: the one way
/// this binding turns an object into text. (nb::str(h) of an object that is not a str does not
/// call str(), and .c_str() of it, or of a str with lone surrogates, is null: a numpy dtype
/// DLPack cannot carry raised "basic_string: construction from null".) Characters UTF-8
/// cannot hold are backslash-escaped; a str() that raises gives "<unprintable TYPE>".
std::string py_str(nb::handle obj);
std::string py_repr(nb::handle obj);

/// A str argument as UTF-8: TypeError "NAME: expected a str, got TYPE", or ValueError "NAME:
/// 's\\ud800' cannot be encoded as UTF-8 (a lone surrogate ...)" for a str UTF-8 cannot hold
/// (the text shown through py_str; a `secret` one, the token, is not shown), instead of
/// nanobind's "incompatible function arguments" for both.
std::string as_str(nb::handle obj, const std::string& name, bool secret = false);
/// None (nullopt), or a list or tuple of str, each checked as as_str does, named "NAME[i]".
std::optional<std::vector<std::string>> as_str_list(nb::handle obj, const std::string& name);

/// An int argument (anything with __index__) in [lo, hi]: TypeError "NAME: expected an int,
/// got TYPE" or ValueError "NAME: V is not in [lo, hi]", any size of V, instead of nanobind's
/// "incompatible function arguments" for an int that does not fit a C++ int.
long long as_int(nb::handle obj, const char* name, long long lo, long long hi);

}  // namespace ccpy
