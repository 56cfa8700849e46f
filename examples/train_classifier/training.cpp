#include "training.hpp"

#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <utility>

#include "classifier.hpp"

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

double evaluate(classifier& model, feed& data, std::uint64_t& samples) {
  torch::NoGradGuard no_grad;
  model->eval();
  torch::Tensor correct = torch::zeros({}, torch::kLong);
  samples = 0;
  while (auto batch = data.next()) {
    correct += (model->forward(batch->images).argmax(1) == batch->labels).sum().cpu();
    samples += static_cast<std::uint64_t>(batch->labels.size(0));
  }
  return samples > 0
             ? static_cast<double>(correct.item<std::int64_t>()) / static_cast<double>(samples)
             : 0;
}

}  // namespace

void warm_up(training_options const& options, feed_options const& feed) {
  classifier model{options.classes};
  model->to(options.device);
  auto const images = torch::zeros(
      {static_cast<std::int64_t>(feed.batch_size), 3, feed.image_size, feed.image_size},
      torch::TensorOptions{}.device(options.device));
  model->forward(images).sum().backward();
}

run_result train_and_evaluate(std::string const& name, feed_factory make, feed_options const& train,
                              feed_options const& held_out, training_options const& options,
                              progress_printer& progress) {
  torch::manual_seed(options.seed);  // the same initial weights (and libtorch's shuffle) per run
  classifier model{options.classes};
  model->to(options.device);
  torch::optim::Adam optimizer{model->parameters(), torch::optim::AdamOptions{options.lr}};
  namespace F = torch::nn::functional;
  auto const summed = F::CrossEntropyFuncOptions{}.reduction(torch::kSum);

  run_result result;
  result.feed = name;
  auto const start = clock_type::now();
  auto data = make(train);
  for (std::size_t epoch = 1; epoch <= options.epochs; ++epoch) {
    model->train();
    optimizer.zero_grad();
    epoch_totals totals{options.device};
    while (auto batch = data->next()) {
      auto const logits = model->forward(batch->images);
      auto const loss = F::cross_entropy(logits, batch->labels, summed);
      // Scaled by the samples of the whole step: the accumulated gradient is the step's mean.
      (loss / static_cast<double>(batch->step.samples_in_step)).backward();
      if (batch->step.last_micro) {
        optimizer.step();
        optimizer.zero_grad();
        ++result.steps;
      }
      totals.loss += loss.detach();
      totals.correct += (logits.detach().argmax(1) == batch->labels).sum();
      totals.samples += static_cast<std::uint64_t>(batch->labels.size(0));
      ++totals.batches;
      result.samples += static_cast<std::uint64_t>(batch->labels.size(0));
      if (progress.due()) {
        auto const [loss_so_far, accuracy] = totals.read(name, epoch);
        double const wall = seconds_since(start);
        progress.draw({.feed = name,
                       .epoch = epoch,
                       .epochs = options.epochs,
                       .batch = totals.batches,
                       .batches = data->batches_per_epoch(),
                       .samples_per_s = static_cast<double>(result.samples) / wall,
                       .wait_share = data->wait_seconds() / wall,
                       .loss = loss_so_far,
                       .accuracy = accuracy});
      }
    }
    auto const [epoch_loss, accuracy] = totals.read(name, epoch);
    result.final_loss = epoch_loss;
    result.train_accuracy = accuracy;
    result.epochs = epoch;
    double const wall = seconds_since(start);
    std::array<char, 200> line{};
    std::snprintf(line.data(), line.size(),
                  "[%s] epoch %zu/%zu: loss %.3f, train acc %.1f%% | %.0f samples/s, data wait "
                  "%.1f%%, %.1f s",
                  name.c_str(), epoch, options.epochs, epoch_loss, 100 * accuracy,
                  static_cast<double>(result.samples) / wall, 100 * data->wait_seconds() / wall,
                  wall);
    progress.print(line.data());
  }
  result.train_seconds = seconds_since(start);
  result.wait_seconds = data->wait_seconds();
  data.reset();  // stops the training loader's workers before the evaluation

  auto eval_data = make(held_out);
  result.held_out_accuracy = evaluate(model, *eval_data, result.held_out_samples);
  return result;
}

}  // namespace train_classifier
