#include "python/samples/sample_tree.hpp"

#include <stdexcept>

#include "python/samples/sample_leaf.hpp"
#include "python/samples/text_table.hpp"

namespace gpufeed::python {

namespace {
constexpr std::size_t max_depth = 32;

std::string join(std::string const& path, std::string const& part) {
  return path.empty() ? part : path + "." + part;
}

bool is_named_tuple(py::handle object) {
  return PyTuple_Check(object.ptr()) && py::hasattr(object, "_fields");
}
}  // namespace

sample_tree sample_tree::infer(py::handle first) {
  sample_tree tree;
  tree.add(first, "", 0);
  return tree;
}

std::size_t sample_tree::add(py::handle object, std::string path, std::size_t depth) {
  if (depth > max_depth) {
    throw std::invalid_argument{"the sample nests deeper than " + std::to_string(max_depth) +
                                " levels at '" + path + "'"};
  }
  auto const n = nodes_.size();
  nodes_.emplace_back();
  nodes_[n].path = path;
  auto const add_children = [&](auto size, auto item) {
    for (std::size_t i = 0; i < static_cast<std::size_t>(size); ++i) {
      auto const child = add(item(i), join(path, std::to_string(i)), depth + 1);
      nodes_[n].children.push_back(child);
    }
  };
  if (PyTuple_Check(object.ptr())) {
    nodes_[n].what = is_named_tuple(object) ? kind::named_tuple : kind::tuple;
    if (nodes_[n].what == kind::named_tuple) {
      nodes_[n].type = py::reinterpret_borrow<py::object>(
          py::handle{reinterpret_cast<PyObject*>(Py_TYPE(object.ptr()))});
    }
    add_children(PyTuple_GET_SIZE(object.ptr()), [&](std::size_t i) {
      return py::handle{PyTuple_GET_ITEM(object.ptr(), static_cast<Py_ssize_t>(i))};
    });
  } else if (PyList_Check(object.ptr())) {
    nodes_[n].what = kind::list;
    add_children(PyList_GET_SIZE(object.ptr()), [&](std::size_t i) {
      return py::handle{PyList_GET_ITEM(object.ptr(), static_cast<Py_ssize_t>(i))};
    });
  } else if (PyDict_Check(object.ptr())) {
    nodes_[n].what = kind::dict;
    nodes_[n].type = py::reinterpret_borrow<py::object>(
        py::handle{reinterpret_cast<PyObject*>(Py_TYPE(object.ptr()))});
    for (auto const item : py::reinterpret_borrow<py::dict>(object)) {
      auto const key = py::reinterpret_borrow<py::object>(item.first);
      auto const name = py::str(key).cast<std::string>();
      auto const child = add(item.second, join(path, name), depth + 1);
      nodes_[n].keys.push_back(key);
      nodes_[n].children.push_back(child);
    }
  } else {
    auto const name = path.empty() ? std::string{"sample"} : path;
    nodes_[n].what = kind::leaf;
    nodes_[n].field = spec_.size();
    nodes_[n].path = name;
    if (is_text(object)) {
      spec_.add(name, dtype::i64, {});  // the text's id in its field's text_table
      kinds_.push_back(PyBytes_Check(object.ptr()) != 0 ? leaf_kind::bytes : leaf_kind::str);
    } else {
      // The caller names the sample: the tree is learnt from whichever sample came first.
      leaf_view const leaf{object.ptr(), leaf_place{std::nullopt, &name}};
      spec_.add(name, leaf.type(), leaf.shape_vector());
      kinds_.push_back(leaf_kind::array);
    }
  }
  if (nodes_[n].what != kind::leaf && nodes_[n].children.empty()) {
    throw std::invalid_argument{"the sample holds an empty container at '" + path +
                                "'; every container in a sample must hold a number or an array"};
  }
  return n;
}

sample_tree sample_tree::from_description(py::handle description, sample_spec spec,
                                          std::vector<leaf_kind> kinds) {
  if (kinds.size() != spec.size()) {
    throw std::invalid_argument{"a sample layout with " + std::to_string(spec.size()) +
                                " fields and " + std::to_string(kinds.size()) + " leaf kinds"};
  }
  sample_tree tree;
  tree.spec_ = std::move(spec);
  tree.kinds_ = std::move(kinds);
  tree.add_described(description, "", 0);
  return tree;
}

std::size_t sample_tree::add_described(py::handle description, std::string path,
                                       std::size_t depth) {
  auto const bad = [&](std::string const& why) {
    throw std::invalid_argument{"a sample structure that cannot be rebuilt at '" + path +
                                "': " + why};
  };
  if (depth > max_depth || !py::isinstance<py::tuple>(description)) {
    bad("not a structure node");
  }
  auto const node_of = py::reinterpret_borrow<py::tuple>(description);
  if (node_of.empty()) bad("an empty node");
  auto const what = node_of[0].cast<std::string>();
  auto const n = nodes_.size();
  nodes_.emplace_back();
  nodes_[n].path = path;
  auto const add_children = [&](py::handle children, auto name_of) {
    std::size_t i = 0;
    for (auto const child : children) {
      auto const c = add_described(child, join(path, name_of(i)), depth + 1);
      nodes_[n].children.push_back(c);
      ++i;
    }
  };
  auto const index_name = [](std::size_t i) { return std::to_string(i); };
  if (what == "leaf" || what == "text") {
    auto const field = node_of[1].cast<std::size_t>();
    if (field >= spec_.size()) bad("field " + std::to_string(field) + " is not in the layout");
    nodes_[n].what = kind::leaf;
    nodes_[n].field = field;
    nodes_[n].path = spec_[field].name;
  } else if (what == "tuple" || what == "list") {
    nodes_[n].what = what == "tuple" ? kind::tuple : kind::list;
    add_children(node_of[1], index_name);
  } else if (what == "namedtuple") {
    nodes_[n].what = kind::named_tuple;
    nodes_[n].type = py::reinterpret_borrow<py::object>(node_of[1]);
    add_children(node_of[2], index_name);
  } else if (what == "dict") {
    nodes_[n].what = kind::dict;
    nodes_[n].type = py::reinterpret_borrow<py::object>(node_of[1]);
    std::vector<py::object> keys;
    for (auto const key : node_of[2]) keys.push_back(py::reinterpret_borrow<py::object>(key));
    add_children(node_of[3],
                 [&](std::size_t i) { return py::str(keys.at(i)).cast<std::string>(); });
    nodes_[n].keys = std::move(keys);
  } else {
    bad("an unknown node '" + what + "'");
  }
  return n;
}

void sample_tree::mismatch(node const& expected, py::handle got, char const* what) const {
  throw std::invalid_argument{
      "'" + (expected.path.empty() ? std::string{"the sample"} : expected.path) + "' is a " +
      std::string{Py_TYPE(got.ptr())->tp_name} + " where the first sample had " + what +
      "; every sample must have the same structure"};
}

py::object sample_tree::describe(std::size_t n) const {
  node const& at = nodes_[n];
  if (at.what == kind::leaf) {
    return py::make_tuple(kinds_[at.field] == leaf_kind::array ? "leaf" : "text", at.field);
  }
  py::list children;
  for (auto const c : at.children) children.append(describe(c));
  switch (at.what) {
    case kind::tuple:
      return py::make_tuple("tuple", children);
    case kind::list:
      return py::make_tuple("list", children);
    case kind::dict: {
      py::list keys;
      for (auto const& k : at.keys) keys.append(k);
      return py::make_tuple("dict", at.type, keys, children);
    }
    case kind::named_tuple:
      return py::make_tuple("namedtuple", at.type, children);
    case kind::leaf:
      break;
  }
  return py::none();
}

py::object sample_tree::describe() const {
  return describe(0);
}

void sample_tree::clear() noexcept {
  nodes_.clear();
}

void sample_tree::clear_leaking() noexcept {
  for (auto& n : nodes_) {
    (void)n.type.release();
    for (auto& key : n.keys) (void)key.release();
  }
  nodes_.clear();
}

}  // namespace gpufeed::python
