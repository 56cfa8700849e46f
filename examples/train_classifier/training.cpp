#include "training.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace train_classifier {
namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

// One epoch's running sums, kept as tensors on the training device so that reading them (which
// waits for the GPU) happens only when a line is drawn.
struct epoch_totals {
  torch::Tensor loss;
  torch::Tensor correct;
  std::uint64_t samples = 0;
  std::size_t batches = 0;

  explicit epoch_totals(torch::Device device)
      : loss{torch::zeros({}, torch::TensorOptions{}.dtype(torch::kDouble).device(device))},
        correct{torch::zeros({}, torch::TensorOptions{}.dtype(torch::kLong).device(device))} {}

  // Mean loss and accuracy so far. @throws std::runtime_error if the loss is not finite.
  [[nodiscard]] std::pair<double, double> read(std::string const& feed, std::size_t epoch) const {
    double const mean_loss = loss.item<double>() / static_cast<double>(samples > 0 ? samples : 1);
    if (!std::isfinite(mean_loss)) {
      throw std::runtime_error{"the training loss is not finite (" + std::to_string(mean_loss) +
                               ") in epoch " + std::to_string(epoch) + ", batch " +
                               std::to_string(batches) + " of the " + feed + " run; lower --lr"};
    }
    return {mean_loss, static_cast<double>(correct.item<std::int64_t>()) /
                           static_cast<double>(samples > 0 ? samples : 1)};
  }
};

// The share of `data`'s samples that `model` classifies right.
double score(classifier& model, feed& data, std::uint64_t& samples) {
  torch::NoGradGuard no_grad;
  model->eval();
  torch::Tensor correct = torch::zeros({}, torch::kLong);
  samples = 0;
  data.start_epoch(0);
  while (auto batch = data.next()) {
    correct += (model->forward(batch->images).argmax(1) == batch->labels).sum().cpu();
    samples += static_cast<std::uint64_t>(batch->labels.size(0));
  }
  (void)data.end_epoch();
  return samples > 0
             ? static_cast<double>(correct.item<std::int64_t>()) / static_cast<double>(samples)
             : 0;
}

constexpr double pace_interval_s = 0.5;

}  // namespace

gpufeed::stats as_loader_stats(run_result const& run) {
  gpufeed::stats s;
  std::vector<double> waits;
  for (auto const& e : run.epoch_measures) {
    s.wall_s += e.wall_s;
    s.first_batch_s += e.first_batch_s;
    s.first_wait_s += e.first_wait_s;
    s.consumer_wait_s += e.wait_s;
    s.read_s += e.busy_s;
    s.slot_wait_s += e.slot_wait_s;
    s.ring_slots = e.ring_slots;
    waits.insert(waits.end(), e.waits.begin(), e.waits.end());
  }
  s.workers = run.workers;
  s.batches = run.batches;
  s.samples = run.samples;
  s.samples_read = run.samples;
  s.consumer_wait.count = waits.size();
  s.consumer_wait.total_s = std::accumulate(waits.begin(), waits.end(), 0.0);
  s.consumer_wait.p50_s = percentile(waits, 0.5);
  s.consumer_wait.p99_s = percentile(waits, 0.99);
  s.consumer_wait.max_s = waits.empty() ? 0 : waits.back();
  s.read.count = run.samples;
  s.read.total_s = s.read_s;
  // Per epoch: the median of the epochs' medians, the largest of their 99th percentiles.
  std::vector<double> p50s;
  for (auto const& e : run.epoch_measures) {
    p50s.push_back(e.busy_p50_s);
    s.read.p99_s = std::max(s.read.p99_s, e.busy_p99_s);
  }
  s.read.p50_s = percentile(p50s, 0.5);
  s.read.max_s = s.read.p99_s;
  return s;
}

void warm_up(training_options const& options, feed_options const& feed) {
  classifier model{options.classes};
  model->to(options.device);
  auto const images = torch::zeros(
      {static_cast<std::int64_t>(feed.batch_size), 3, feed.image_size, feed.image_size},
      torch::TensorOptions{}.device(options.device));
  model->forward(images).sum().backward();
}

training_run::training_run(std::string name, feed_factory make, feed_options train,
                           feed_options held_out, training_options const& options)
    : make_{make},
      train_{std::move(train)},
      held_out_{std::move(held_out)},
      options_{options},
      model_{[&] {
        torch::manual_seed(options.seed);  // the same initial weights in every run
        return classifier{options.classes};
      }()} {
  model_->to(options_.device);
  optimizer_ = std::make_unique<torch::optim::Adam>(model_->parameters(),
                                                    torch::optim::AdamOptions{options_.lr});
  result_.feed = std::move(name);
}

void training_run::train_epoch(progress_printer& progress) {
  namespace F = torch::nn::functional;
  auto const summed = F::CrossEntropyFuncOptions{}.reduction(torch::kSum);
  auto const start = clock_type::now();
  std::clock_t const cpu_start = std::clock();  // the process's CPU time, every thread
  double const seconds_before = result_.train_seconds;
  double const wait_before = feed_ ? feed_->wait_seconds() : 0.0;
  auto const run_seconds = [&] { return seconds_before + seconds_since(start); };
  if (!feed_) feed_ = make_(train_);  // its file list is read here: on the run's clock
  feed_->start_epoch(result_.epochs);

  std::size_t const epoch = result_.epochs + 1;
  auto const& name = result_.feed;
  model_->train();
  optimizer_->zero_grad();
  epoch_totals totals{options_.device};
  while (auto batch = feed_->next()) {
    auto const logits = model_->forward(batch->images);
    auto const loss = F::cross_entropy(logits, batch->labels, summed);
    // Scaled by the samples of the whole step: the accumulated gradient is the step's mean.
    (loss / static_cast<double>(batch->step.samples_in_step)).backward();
    if (batch->step.last_micro) {
      optimizer_->step();
      optimizer_->zero_grad();
      ++result_.steps;
    }
    totals.loss += loss.detach();
    totals.correct += (logits.detach().argmax(1) == batch->labels).sum();
    totals.samples += static_cast<std::uint64_t>(batch->labels.size(0));
    ++totals.batches;
    ++result_.batches;
    result_.samples += static_cast<std::uint64_t>(batch->labels.size(0));
    double const now = run_seconds();
    if (now - pace_start_s_ >= pace_interval_s) {
      record_pace(now, feed_->wait_seconds() - wait_before + result_.wait_seconds, progress);
    }
    if (progress.due()) {
      auto const [loss_so_far, accuracy] = totals.read(name, epoch);
      double const wall = run_seconds();
      progress.draw(
          {.feed = name,
           .epoch = epoch,
           .epochs = options_.epochs,
           .batch = totals.batches,
           .batches = feed_->batches_per_epoch(),
           .samples_per_s = static_cast<double>(result_.samples) / wall,
           .wait_share = (result_.wait_seconds + feed_->wait_seconds() - wait_before) / wall,
           .loss = loss_so_far,
           .accuracy = accuracy});
    }
  }
  result_.epoch_measures.push_back(feed_->end_epoch());
  auto const [epoch_loss, accuracy] = totals.read(name, epoch);
  result_.final_loss = epoch_loss;
  result_.train_accuracy = accuracy;
  result_.epochs = epoch;
  result_.train_seconds = run_seconds();
  result_.wait_seconds += feed_->wait_seconds() - wait_before;
  // The epoch's tail, unless it is too short to mean much (then it opens the next interval); but
  // always the run's first point: a run shorter than a quarter of an interval (--quick on a fast
  // loader) would otherwise have no line in the chart.
  if (result_.train_seconds - pace_start_s_ >= pace_interval_s / 2 || result_.pace.empty()) {
    record_pace(result_.train_seconds, result_.wait_seconds, progress);
  }
  cpu_ += std::clock() - cpu_start;
  result_.cpu_seconds = static_cast<double>(cpu_) / CLOCKS_PER_SEC;

  std::array<char, 200> line{};
  std::snprintf(line.data(), line.size(),
                "[%s] epoch %zu/%zu: loss %.3f, train acc %.1f%% | %.0f samples/s, data wait "
                "%.1f%%, %.1f s",
                name.c_str(), epoch, options_.epochs, epoch_loss, 100 * accuracy,
                result_.samples_per_s(), 100 * result_.wait_share(), result_.train_seconds);
  progress.print(line.data());
}

void training_run::record_pace(double run_seconds, double wait_seconds,
                               progress_printer const& progress) {
  double const span = run_seconds - pace_start_s_;
  if (span <= 0) return;
  result_.pace.push_back(
      {.t_s = run_seconds,
       .samples_per_s = static_cast<double>(result_.samples - pace_samples_start_) / span,
       .wait_share = std::clamp((wait_seconds - pace_wait_start_s_) / span, 0.0, 1.0),
       .gpu_percent = progress.gpu_percent()});
  pace_start_s_ = run_seconds;
  pace_wait_start_s_ = wait_seconds;
  pace_samples_start_ = result_.samples;
}

void training_run::evaluate() {
  if (feed_) result_.stages = feed_->stages();
  feed_.reset();  // stops the training loader's workers before the evaluation
  result_.workers = train_.workers;
  result_.diagnosis = gpufeed::diagnose(as_loader_stats(result_));
  auto data = make_(held_out_);
  result_.held_out_accuracy = score(model_, *data, result_.held_out_samples);
}

}  // namespace train_classifier
