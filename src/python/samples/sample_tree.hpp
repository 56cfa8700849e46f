#pragma once
// The structure of a Python sample (tuples, lists, dicts and named tuples of leaves, nested),
// inferred from the first sample: each leaf becomes a field of the batch, named after its path
// ("0", "image", "1.mask"), and every later sample is checked against it.

#include <pybind11/pybind11.h>

#include <cstddef>
#include <string>
#include <vector>

#include "gpufeed/sample_spec.hpp"

namespace gpufeed::python {

namespace py = pybind11;

class sample_tree {
 public:
  /// Infers the structure and the fields from `first` (GIL held).
  /// @throws std::invalid_argument when a leaf is not a number, an array, str or bytes.
  static sample_tree infer(py::handle first);

  /// What a field's leaf is in the first sample: an array or number, or text (its field holds an
  /// int64 id; see text_table).
  enum class leaf_kind : unsigned char { array, str, bytes };

  /// The tree that `describe()` described, with its fields and their kinds (GIL held): another
  /// process's tree, rebuilt in a worker process.
  /// @throws std::invalid_argument when the description does not fit the fields.
  static sample_tree from_description(py::handle description, sample_spec spec,
                                      std::vector<leaf_kind> kinds);

  /// The fields, one per leaf, in depth-first order.
  [[nodiscard]] sample_spec const& spec() const noexcept { return spec_; }

  [[nodiscard]] std::vector<leaf_kind> const& kinds() const noexcept { return kinds_; }
  [[nodiscard]] leaf_kind kind_of(std::size_t field) const noexcept { return kinds_[field]; }

  /// Calls `visit(field, leaf_object, path)` for each leaf of `sample`, in field order (GIL
  /// held). @throws std::invalid_argument naming the path when `sample`'s structure differs.
  template <class Visit>
  void for_each_leaf(py::handle sample, Visit&& visit) const {
    walk(0, sample, visit);
  }

  /// The structure for the Python side to rebuild batches with: nested tuples
  /// ("leaf", field), ("text", field), ("tuple", [...]), ("list", [...]),
  /// ("dict", type, keys, [...]), ("namedtuple", type, [...]).
  [[nodiscard]] py::object describe() const;

  /// Drops the Python objects held (GIL held); the tree is unusable afterwards.
  void clear() noexcept;
  /// Forgets the Python objects held without dropping their references (no GIL needed): for
  /// an interpreter that is gone.
  void clear_leaking() noexcept;

 private:
  enum class kind : unsigned char { leaf, tuple, list, dict, named_tuple };
  struct node {
    kind what = kind::leaf;
    std::size_t field = 0;              // leaf
    std::vector<std::size_t> children;  // positions in nodes_
    std::vector<py::object> keys;       // dict
    py::object type;                    // dict, named_tuple
    std::string path;                   // "" for the root
  };

  std::size_t add(py::handle object, std::string path, std::size_t depth);
  std::size_t add_described(py::handle description, std::string path, std::size_t depth);
  [[nodiscard]] py::object describe(std::size_t n) const;
  template <class Visit>
  void walk(std::size_t n, py::handle object, Visit& visit) const;
  [[noreturn]] void mismatch(node const& expected, py::handle got, char const* what) const;

  std::vector<node> nodes_;  // nodes_[0] is the root
  sample_spec spec_;
  std::vector<leaf_kind> kinds_;  // per field
};

template <class Visit>
void sample_tree::walk(std::size_t n, py::handle object, Visit& visit) const {
  node const& at = nodes_[n];
  switch (at.what) {
    case kind::leaf:
      visit(at.field, object, at.path);
      return;
    case kind::tuple:
    case kind::named_tuple: {
      if (!PyTuple_Check(object.ptr())) mismatch(at, object, "a tuple");
      if (at.what == kind::named_tuple && !py::isinstance(object, at.type)) {
        mismatch(at, object, "the same named tuple");
      }
      if (static_cast<std::size_t>(PyTuple_GET_SIZE(object.ptr())) != at.children.size()) {
        mismatch(at, object, "a tuple of the same length");
      }
      for (std::size_t i = 0; i < at.children.size(); ++i) {
        walk(at.children[i], PyTuple_GET_ITEM(object.ptr(), static_cast<Py_ssize_t>(i)), visit);
      }
      return;
    }
    case kind::list: {
      if (!PyList_Check(object.ptr())) mismatch(at, object, "a list");
      if (static_cast<std::size_t>(PyList_GET_SIZE(object.ptr())) != at.children.size()) {
        mismatch(at, object, "a list of the same length");
      }
      for (std::size_t i = 0; i < at.children.size(); ++i) {
        walk(at.children[i], PyList_GET_ITEM(object.ptr(), static_cast<Py_ssize_t>(i)), visit);
      }
      return;
    }
    case kind::dict: {
      if (!PyDict_Check(object.ptr())) mismatch(at, object, "a dict");
      if (static_cast<std::size_t>(PyDict_Size(object.ptr())) != at.keys.size()) {
        mismatch(at, object, "a dict with the same keys");
      }
      for (std::size_t i = 0; i < at.children.size(); ++i) {
        PyObject* value = PyDict_GetItemWithError(object.ptr(), at.keys[i].ptr());
        if (value == nullptr) {
          if (PyErr_Occurred() != nullptr) throw py::error_already_set();
          mismatch(at, object, "a dict with the same keys");
        }
        walk(at.children[i], value, visit);
      }
      return;
    }
  }
}

}  // namespace gpufeed::python
