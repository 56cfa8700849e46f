#include "gpufeed/batch.hpp"

#include <string>
#include <utility>

#include "gpufeed/detail/loader_core.hpp"
#include "gpufeed/error.hpp"

namespace gpufeed {

batch::batch(batch&& other) noexcept
    : core_{std::move(other.core_)}, slot_{std::exchange(other.slot_, nullptr)} {}

batch& batch::operator=(batch&& other) noexcept {
  if (this != &other) {
    release();
    core_ = std::move(other.core_);
    slot_ = std::exchange(other.slot_, nullptr);
  }
  return *this;
}

batch::~batch() {
  release();
}

void batch::release() noexcept {
  if (slot_ != nullptr) {
    core_->release(std::exchange(slot_, nullptr));
  }
  core_.reset();
}

void batch::use_on(stream_view stream) {
  GPUFEED_EXPECTS(slot_ != nullptr, "use_on: this batch is empty (moved from or released)");
  core_->use_on(*slot_, stream);
}

std::size_t batch::size() const noexcept {
  return slot_ ? slot_->delivered : 0;
}
std::uint64_t batch::sequence() const noexcept {
  return slot_ ? slot_->at.sequence : 0;
}
std::uint64_t batch::epoch() const noexcept {
  return slot_ ? slot_->at.epoch : 0;
}
step_info batch::step() const noexcept {
  return slot_ ? slot_->step : step_info{};
}

std::size_t batch::fields() const noexcept {
  return slot_ ? core_->layout().spec().size() : 0;
}

tensor_view batch::host_field(std::size_t f) const {
  GPUFEED_EXPECTS(slot_ != nullptr, "this batch is empty (moved from or released)");
  auto const& layout = core_->layout();
  GPUFEED_EXPECTS(f < layout.spec().size(), "field " + std::to_string(f) +
                                                " does not exist; the batch has " +
                                                std::to_string(layout.spec().size()) + " fields");
  auto const& fld = layout.spec()[f];
  return tensor_view{fld.name,         fld.type,  layout.locate(slot_->memory, f, 0),
                     slot_->delivered, fld.shape, -1};
}

tensor_view batch::field(std::size_t f) const {
  auto const* stage = slot_ != nullptr ? core_->stage() : nullptr;
  if (stage == nullptr) {
    return host_field(f);
  }
  auto const host = host_field(f);  // checks f
  auto const& out = stage->layout().field(f);
  return tensor_view{
      host.name(),      out.type,  stage->device_memory(slot_->id) + out.device_offset,
      slot_->delivered, out.shape, stage->device()};
}

tensor_view batch::field(std::string_view name) const {
  GPUFEED_EXPECTS(slot_ != nullptr, "this batch is empty (moved from or released)");
  auto const f = core_->layout().spec().find(name);
  GPUFEED_EXPECTS(f.has_value(), "no field named '" + std::string{name} + "'; the batch has " +
                                     core_->layout().spec().to_string());
  return field(*f);
}

std::span<std::size_t const> batch::indices() const noexcept {
  if (slot_ == nullptr) {
    return {};
  }
  return {slot_->indices.data(), slot_->delivered};
}

std::span<std::size_t const> batch::skipped() const noexcept {
  if (slot_ == nullptr) {
    return {};
  }
  return slot_->skipped;
}

}  // namespace gpufeed
