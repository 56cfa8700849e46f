#include "python/bindings/datasets.hpp"

#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

#include "gpufeed/datasets/in_memory.hpp"
#include "gpufeed/datasets/synthetic.hpp"
#include "python/bindings/batch.hpp"
#include "python/samples/dtypes.hpp"
#include "python/threads/gil.hpp"
#include "python/threads/python_dataset.hpp"
#if GPUFEED_WITH_HDF5
#include "gpufeed/datasets/hdf5.hpp"
#endif
#if GPUFEED_WITH_IMAGES
#include "gpufeed/datasets/file_list.hpp"
#include "gpufeed/datasets/image_folder.hpp"
#endif

namespace gpufeed::python {

namespace {

py::list spec_of(dataset const& d) {
  py::list out;
  auto const spec = d.spec();  // by value: the loop must not run over a temporary's fields
  for (auto const& f : spec.fields()) {
    out.append(
        py::make_tuple(f.name, std::string{to_string(f.type)}, py::tuple(py::cast(f.shape))));
  }
  return out;
}

dtype dtype_of(std::string const& name, std::string const& where) {
  auto const type = dtype_named(name);
  if (!type) {
    throw py::value_error{where + ": unknown dtype '" + name +
                          "'; use uint8, int8, uint16, int16, int32, int64, float16, bfloat16, "
                          "float32, float64 or bool"};
  }
  return *type;
}

// A Python object kept alive by a C++ owner; its last reference is dropped under the GIL.
std::shared_ptr<void const> keep_alive(py::object object) {
  return {object.release().ptr(),
          [](void const* p) { release_reference(static_cast<PyObject*>(const_cast<void*>(p))); }};
}

#if GPUFEED_WITH_IMAGES
float as_float(py::handle v, std::string const& name) {
  try {
    return v.cast<float>();
  } catch (py::cast_error const&) {
    throw py::value_error{name + ": expected a number"};
  }
}

// image_options from keyword arguments named as its fields.
image_options image_options_from(py::dict const& kwargs) {
  image_options o;
  for (auto const item : kwargs) {
    auto const key = item.first.cast<std::string>();
    auto const v = item.second;
    auto const pair = [&](float& low, float& high) {
      auto const values = v.cast<std::vector<float>>();
      if (values.size() != 2) throw py::value_error{key + ": expected (low, high)"};
      low = values[0];
      high = values[1];
    };
    if (key == "height") {
      o.height = v.cast<int>();
    } else if (key == "width") {
      o.width = v.cast<int>();
    } else if (key == "size") {  // torchvision's habit: one int, or (height, width)
      if (py::isinstance<py::int_>(v)) {
        o.height = o.width = v.cast<int>();
      } else {
        auto const hw = v.cast<std::vector<int>>();
        if (hw.size() != 2) throw py::value_error{"size: expected an int or (height, width)"};
        o.height = hw[0];
        o.width = hw[1];
      }
    } else if (key == "resize") {
      auto const mode = v.cast<std::string>();
      if (mode == "center_crop") {
        o.resize = resize_mode::center_crop;
      } else if (mode == "random_resized_crop") {
        o.resize = resize_mode::random_resized_crop;
      } else {
        throw py::value_error{"resize: expected 'center_crop' or 'random_resized_crop', got '" +
                              mode + "'"};
      }
    } else if (key == "resize_to") {
      o.resize_to = v.cast<int>();
    } else if (key == "scale") {
      pair(o.scale_min, o.scale_max);
    } else if (key == "ratio") {
      pair(o.ratio_min, o.ratio_max);
    } else if (key == "horizontal_flip") {
      o.horizontal_flip = v.cast<bool>();
    } else if (key == "jitter") {
      if (v.is_none()) continue;
      auto const d = v.cast<py::dict>();
      for (auto const j : d) {
        auto const name = j.first.cast<std::string>();
        auto const value = as_float(j.second, "jitter[" + name + "]");
        if (name == "brightness") {
          o.jitter.brightness = value;
        } else if (name == "contrast") {
          o.jitter.contrast = value;
        } else if (name == "saturation") {
          o.jitter.saturation = value;
        } else if (name == "hue") {
          o.jitter.hue = value;
        } else {
          throw py::value_error{"jitter: unknown key '" + name +
                                "'; the keys are brightness, contrast, saturation, hue"};
        }
      }
    } else if (key == "full_decoding") {
      o.full_decoding = v.cast<bool>();
    } else if (key == "check_whole_file") {
      o.check_whole_file = v.cast<bool>();
    } else {
      throw py::value_error{"unknown image option '" + key +
                            "'; the options are height, width, size, resize, resize_to, scale, "
                            "ratio, horizontal_flip, jitter, full_decoding, check_whole_file"};
    }
  }
  return o;
}

py::list entries_of(std::vector<image_entry> const& entries) {
  py::list out;
  for (auto const& e : entries) out.append(py::make_tuple(e.path, e.label));
  return out;
}
#endif

}  // namespace

void bind_datasets(py::module_& m) {
  py::class_<dataset, std::shared_ptr<dataset>>(m, "Dataset", py::dynamic_attr(),
                                                "A gpufeed dataset (C++).")
      .def("__len__", [](dataset const& d) { return d.size(); })
      .def_property_readonly("fields", &spec_of,
                             "The sample's fields: (name, dtype, shape) in order.");

  py::class_<synthetic, dataset, std::shared_ptr<synthetic>>(m, "Synthetic", py::dynamic_attr())
      .def(
          py::init(
              [](std::size_t size,
                 std::vector<std::tuple<std::string, std::string, std::vector<std::int64_t>>> const&
                     fields,
                 std::uint64_t seed, double cpu_cost_us, double sleep_us, bool write) {
                sample_spec spec;
                for (auto const& [name, type, shape] : fields) {
                  spec.add(name, dtype_of(type, "fields"), shape);
                }
                synthetic_options o;
                o.seed = seed;
                o.cpu_cost = std::chrono::nanoseconds{static_cast<std::int64_t>(cpu_cost_us * 1e3)};
                o.sleep = std::chrono::nanoseconds{static_cast<std::int64_t>(sleep_us * 1e3)};
                o.write = write;
                return std::make_shared<synthetic>(size, std::move(spec), o);
              }),
          py::arg("size"), py::arg("fields"), py::arg("seed") = 0, py::arg("cpu_cost_us") = 0.0,
          py::arg("sleep_us") = 0.0, py::arg("write") = true);

  py::class_<in_memory, dataset, std::shared_ptr<in_memory>>(m, "InMemory", py::dynamic_attr())
      .def(py::init([](std::size_t size) { return std::make_shared<in_memory>(size); }),
           py::arg("size"))
      .def(
          "add",
          [](in_memory& d, std::string name, py::buffer const& array) {
            auto const info = array.request();
            auto const type =
                from_buffer_format(info.format, static_cast<std::size_t>(info.itemsize));
            if (!type) {
              throw py::value_error{"InMemory: array '" + name + "' has format '" + info.format +
                                    "', which gpufeed cannot batch"};
            }
            if (info.ndim < 1) {
              throw py::value_error{"InMemory: array '" + name +
                                    "' has no first dimension to index samples by"};
            }
            std::int64_t expected = info.itemsize;
            for (auto d2 = info.ndim; d2-- > 0;) {
              if (info.strides[static_cast<std::size_t>(d2)] != expected) {
                throw py::value_error{"InMemory: array '" + name +
                                      "' is not C-contiguous; pass numpy.ascontiguousarray(a)"};
              }
              expected *= info.shape[static_cast<std::size_t>(d2)];
            }
            std::vector<std::int64_t> shape(info.shape.begin() + 1, info.shape.end());
            auto const bytes = static_cast<std::size_t>(info.size * info.itemsize);
            d.add_bytes(std::move(name), *type, std::move(shape),
                        std::span<std::byte const>{static_cast<std::byte const*>(info.ptr), bytes},
                        keep_alive(py::reinterpret_borrow<py::object>(array)));
          },
          py::arg("name"), py::arg("array"),
          "Adds a field whose rows are the array's first dimension; keeps the array alive and "
          "does not copy it.");

  py::class_<python_dataset, dataset, std::shared_ptr<python_dataset>>(m, "PythonDataset",
                                                                       py::dynamic_attr())
      .def(py::init([](py::object data, py::object worker_init_fn) {
             return std::make_shared<python_dataset>(std::move(data), std::move(worker_init_fn));
           }),
           py::arg("dataset"), py::arg("worker_init_fn") = py::none())
      .def_property_readonly("structure", &python_dataset::structure)
      .def(
          "texts",
          [](python_dataset const& d, batch_lease const& b, std::size_t field) {
            return d.texts(b.value, field);
          },
          py::arg("batch"), py::arg("field"),
          "The str or bytes values of a text field of a batch, one per sample.")
      .def_property_readonly("texts_kept", &python_dataset::texts_kept,
                             "Distinct text values kept so far (all text fields).")
      .def_property_readonly_static(
          "text_values_beyond_length", [](py::object const&) { return text_values_beyond_length; },
          "Distinct values a text field may keep beyond the dataset's length.")
      .def("gil_times", [](python_dataset const& d) {
        auto const t = d.times();
        py::dict out;
        out["wait_s"] = t.wait_s;
        out["python_s"] = t.python_s;
        out["copy_s"] = t.copy_s;
        out["reads"] = t.reads;
        return out;
      });

  m.def("get_worker_info", []() -> py::object {
    auto const& info = current_worker_info();
    if (!info.inside) return py::none();
    py::dict out;
    out["id"] = info.id;
    out["num_workers"] = info.workers;
    out["seed"] = info.seed;
    out["dataset"] = py::reinterpret_borrow<py::object>(info.dataset);
    return out;
  });

#if GPUFEED_WITH_HDF5
  py::class_<hdf5_dataset, dataset, std::shared_ptr<hdf5_dataset>>(m, "HDF5", py::dynamic_attr())
      .def(py::init([](std::string path, std::vector<std::string> fields, std::size_t cache_chunks,
                       bool force_h5dread) {
             return std::make_shared<hdf5_dataset>(
                 std::move(path), hdf5_options{std::move(fields), cache_chunks, force_h5dread});
           }),
           py::arg("path"), py::arg("fields") = std::vector<std::string>{},
           py::arg("cache_chunks") = 8, py::arg("force_h5dread") = false)
      .def_property_readonly("path", &hdf5_dataset::path)
      .def_property_readonly("chunk_rows", &hdf5_dataset::storage_chunk);
  m.attr("has_hdf5") = true;
#else
  m.attr("has_hdf5") = false;
#endif

#if GPUFEED_WITH_IMAGES
  py::class_<image_folder, dataset, std::shared_ptr<image_folder>>(m, "ImageFolder",
                                                                   py::dynamic_attr())
      .def(py::init([](std::string const& root, py::kwargs const& kwargs) {
             return std::make_shared<image_folder>(root, image_options_from(kwargs));
           }),
           py::arg("root"))
      .def_property_readonly("classes", &image_folder::classes)
      .def_property_readonly("samples",
                             [](image_folder const& d) { return entries_of(d.entries()); });
  py::class_<file_list, dataset, std::shared_ptr<file_list>>(m, "FileList", py::dynamic_attr())
      .def(py::init([](std::string const& csv, py::kwargs const& kwargs) {
             return std::make_shared<file_list>(csv, image_options_from(kwargs));
           }),
           py::arg("csv"))
      .def_property_readonly("samples", [](file_list const& d) { return entries_of(d.entries()); });
  m.attr("has_images") = true;
#else
  m.attr("has_images") = false;
#endif
}

}  // namespace gpufeed::python
