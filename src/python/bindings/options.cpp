#include "python/bindings/options.hpp"

#include <pybind11/stl.h>

#include <chrono>
#include <functional>
#include <map>
#include <string>

#include "python/samples/dtypes.hpp"

namespace gpufeed::python {

namespace {

template <class T>
T as(py::handle value, std::string const& name, char const* expected) {
  try {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      if (PyBool_Check(value.ptr()) || !PyLong_Check(value.ptr())) throw py::cast_error{};
      if constexpr (std::is_unsigned_v<T>) {
        if (value.cast<long long>() < 0) throw py::cast_error{};
      }
    }
    return value.cast<T>();
  } catch (py::cast_error const&) {
    throw py::value_error{name + ": expected " + expected + ", got " +
                          py::repr(value).cast<std::string>()};
  }
}

template <class T>
std::optional<T> optional_of(py::handle value, std::string const& name, char const* expected) {
  if (value.is_none()) return std::nullopt;
  return as<T>(value, name, expected);
}

std::chrono::milliseconds milliseconds_of(py::handle value, std::string const& name) {
  auto const seconds = as<double>(value, name, "a number of seconds");
  if (!(seconds >= 0) || seconds > 1e9) {
    throw py::value_error{name + ": expected seconds from 0 to 1e9, got " +
                          std::to_string(seconds)};
  }
  return std::chrono::milliseconds{static_cast<std::int64_t>(seconds * 1000.0 + 0.5)};
}

template <class Enum>
Enum choice(py::handle value, std::string const& name,
            std::initializer_list<std::pair<char const*, Enum>> choices) {
  auto const text = as<std::string>(value, name, "a string");
  std::string allowed;
  for (auto const& [word, e] : choices) {
    if (text == word) return e;
    allowed += allowed.empty() ? "" : ", ";
    allowed += std::string{"'"} + word + "'";
  }
  throw py::value_error{name + ": expected one of " + allowed + ", got '" + text + "'"};
}

image_layout layout_of(py::handle value, std::string const& name) {
  return choice<image_layout>(value, name,
                              {{"hwc", image_layout::hwc}, {"chw", image_layout::chw}});
}

field_transform transform_of(py::handle item) {
  auto const d = as<py::dict>(item, "transforms", "a list of dicts");
  field_transform t;
  bool named = false;
  for (auto const entry : d) {
    auto const key = as<std::string>(entry.first, "transforms", "string keys");
    auto const name = "transforms[" + key + "]";
    if (key == "field") {
      t.field = as<std::string>(entry.second, name, "a field name");
      named = true;
    } else if (key == "dtype") {
      auto const type = dtype_named(as<std::string>(entry.second, name, "a dtype name"));
      if (!type) throw py::value_error{name + ": expected 'float32', 'float16' or 'bfloat16'"};
      t.to = *type;
    } else if (key == "input_layout") {
      t.input_layout = layout_of(entry.second, name);
    } else if (key == "layout" || key == "output_layout") {
      t.output_layout = layout_of(entry.second, name);
    } else if (key == "scale") {
      t.scale = as<float>(entry.second, name, "a number");
    } else if (key == "mean") {
      t.mean = as<std::vector<float>>(entry.second, name, "a list of numbers");
    } else if (key == "std") {
      t.std = as<std::vector<float>>(entry.second, name, "a list of numbers");
    } else {
      throw py::value_error{"transforms: unknown key '" + key +
                            "'; the keys are field, dtype, input_layout, layout, scale, mean, "
                            "std"};
    }
  }
  if (!named) throw py::value_error{"transforms: each transform needs a 'field'"};
  return t;
}

void autotune_from(py::handle value, autotune_options& a) {
  auto const d = as<py::dict>(value, "autotune", "a dict");
  for (auto const entry : d) {
    auto const key = as<std::string>(entry.first, "autotune", "string keys");
    auto const name = "autotune[" + key + "]";
    if (key == "max_workers") {
      a.max_workers = as<unsigned>(entry.second, name, "a non-negative integer");
    } else if (key == "max_depth") {
      a.max_depth = as<std::size_t>(entry.second, name, "a positive integer");
    } else if (key == "memory_budget") {
      a.memory_budget = optional_of<std::size_t>(entry.second, name, "bytes or None");
    } else if (key == "window_batches") {
      a.window_batches = as<std::size_t>(entry.second, name, "a positive integer");
    } else {
      throw py::value_error{"autotune: unknown key '" + key +
                            "'; the keys are max_workers, max_depth, memory_budget, "
                            "window_batches"};
    }
  }
}

using setter = std::function<void(loader_options&, py::handle, std::string const&)>;

std::map<std::string, setter> const& setters() {
  static std::map<std::string, setter> const table{
      {"batch_size",
       [](auto& o, auto v, auto const& n) {
         o.batch_size = as<std::size_t>(v, n, "a positive integer");
       }},
      {"workers",
       [](auto& o, auto v, auto const& n) {
         o.workers = py::isinstance<py::str>(v) && v.template cast<std::string>() == "auto"
                         ? auto_workers
                         : as<unsigned>(v, n, "a positive integer or 'auto'");
       }},
      {"prefetch_depth",
       [](auto& o, auto v, auto const& n) {
         o.prefetch_depth = py::isinstance<py::str>(v) && v.template cast<std::string>() == "auto"
                                ? auto_depth
                                : as<std::size_t>(v, n, "a positive integer or 'auto'");
       }},
      {"accumulation_steps",
       [](auto& o, auto v, auto const& n) {
         o.accumulation_steps = as<std::size_t>(v, n, "a positive integer");
       }},
      {"shuffle", [](auto& o, auto v, auto const& n) { o.shuffle = as<bool>(v, n, "a bool"); }},
      {"seed",
       [](auto& o, auto v, auto const& n) {
         // torch seeds are signed 64-bit; keep their bits.
         o.seed = static_cast<std::uint64_t>(as<long long>(v, n, "an integer"));
       }},
      {"order",
       [](auto& o, auto v, auto const& n) {
         o.order = choice<sample_order>(
             v, n, {{"builtin", sample_order::builtin}, {"given", sample_order::given}});
       }},
      {"chunk_window",
       [](auto& o, auto v, auto const& n) {
         o.chunk_window = as<std::size_t>(v, n, "a non-negative integer");
       }},
      {"drop_last",
       [](auto& o, auto v, auto const& n) {
         o.last_batch = as<bool>(v, n, "a bool") ? tail_policy::drop : tail_policy::keep;
       }},
      {"drop_last_step",
       [](auto& o, auto v, auto const& n) {
         o.last_step = as<bool>(v, n, "a bool") ? tail_policy::drop : tail_policy::keep;
       }},
      {"on_error",
       [](auto& o, auto v, auto const& n) {
         o.on_error = choice<error_policy>(
             v, n, {{"raise", error_policy::raise}, {"skip", error_policy::skip}});
       }},
      {"timeout", [](auto& o, auto v, auto const& n) { o.timeout = milliseconds_of(v, n); }},
      {"stall_warning",
       [](auto& o, auto v, auto const& n) { o.stall_warning = milliseconds_of(v, n); }},
      {"rank",
       [](auto& o, auto v, auto const& n) {
         o.rank = optional_of<unsigned>(v, n, "a non-negative integer or None");
       }},
      {"world_size",
       [](auto& o, auto v, auto const& n) {
         o.world_size = optional_of<unsigned>(v, n, "a positive integer or None");
       }},
      {"held_batches_budget",
       [](auto& o, auto v, auto const& n) {
         o.held_batches_budget = optional_of<std::size_t>(v, n, "bytes or None");
       }},
      {"max_listed_skips",
       [](auto& o, auto v, auto const& n) {
         o.max_listed_skips = as<std::size_t>(v, n, "a non-negative integer");
       }},
      {"trace_events",
       [](auto& o, auto v, auto const& n) {
         o.trace_events = as<std::size_t>(v, n, "a non-negative integer");
       }},
      {"autotune", [](auto& o, auto v, auto const&) { autotune_from(v, o.autotune); }},
      {"device",
       [](auto& o, auto v, auto const& n) {
         // None: host memory; "cuda": the default device (LOCAL_RANK, else 0); N: device N.
         if (v.is_none()) {
           o.target = placement::host;
         } else if (py::isinstance<py::str>(v) && v.template cast<std::string>() == "cuda") {
           o.target = placement::cuda;
         } else {
           o.target = placement::cuda;
           o.device = as<int>(v, n, "None, 'cuda' or a CUDA device number");
         }
       }},
      {"staging",
       [](auto& o, auto v, auto const& n) {
         o.staging = choice<staging_memory>(
             v, n, {{"pinned", staging_memory::pinned}, {"pageable", staging_memory::pageable}});
       }},
      {"pinned_budget",
       [](auto& o, auto v, auto const& n) {
         o.pinned_budget = optional_of<std::size_t>(v, n, "bytes or None");
       }},
      {"transforms",
       [](auto& o, auto v, auto const& n) {
         o.transforms.clear();
         for (auto const item : as<py::list>(v, n, "a list of dicts")) {
           o.transforms.push_back(transform_of(item));
         }
       }},
  };
  return table;
}

}  // namespace

loader_options options_from(py::dict const& kwargs) {
  loader_options options;
  for (auto const item : kwargs) {
    auto const name = as<std::string>(item.first, "option", "a string");
    auto const found = setters().find(name);
    if (found == setters().end()) {
      std::string known;
      for (auto const& [key, unused] : setters()) known += (known.empty() ? "" : ", ") + key;
      throw py::value_error{"unknown loader option '" + name + "'; the options are " + known};
    }
    found->second(options, item.second, name);
  }
  return options;
}

}  // namespace gpufeed::python
