// The C++ core's messages as a Python user reads them: the DataLoader's argument names and
// Python values instead of loader_options::, placement::, staging_memory::, stats:: and
// gpufeed::auto_depth, and no precondition's source location.
#include "python/bindings/python_terms.hpp"

#include <gtest/gtest.h>

#include <string>

namespace {

using gpufeed::python::in_python_terms;

TEST(python_terms_test, OptionsAreNamedAsTheDataLoadersArguments) {
  EXPECT_EQ(in_python_terms("loader_options::batch_size must be positive"),
            "batch_size must be positive");
  EXPECT_EQ(in_python_terms("raise loader_options::held_batches_budget."),
            "raise held_batches_budget.");  // the full stop stays outside the name
}

TEST(python_terms_test, OptionsWithAnotherPythonNameAreRenamed) {
  EXPECT_EQ(in_python_terms("lower loader_options::workers"), "lower num_workers");
  EXPECT_EQ(in_python_terms("loader_options::target is CUDA"), "device is CUDA");
  // Only whole names: an option that merely begins like a renamed one keeps its name.
  EXPECT_EQ(in_python_terms("loader_options::workers_per_gpu"), "workers_per_gpu");
}

TEST(python_terms_test, AnAssignmentReadsAsAKeywordArgument) {
  EXPECT_EQ(in_python_terms("loader_options::prefetch_depth = 0 is out of range"),
            "prefetch_depth=0 is out of range");
  EXPECT_EQ(in_python_terms("loader_options::workers = 3"), "num_workers=3");
}

TEST(python_terms_test, ValuesTakeTheirPythonSpelling) {
  EXPECT_EQ(in_python_terms("use gpufeed::auto_depth or 1-64"), "use 'auto' or 1-64");
  EXPECT_EQ(in_python_terms("loader_options::target = placement::cuda needs a GPU"),
            "device='cuda' needs a GPU");
  EXPECT_EQ(in_python_terms("placement::host batches"), "None batches");
}

TEST(python_terms_test, StagingValuesAreTheirPythonStrings) {
  EXPECT_EQ(in_python_terms("or use staging = staging_memory::pageable to pin nothing"),
            "or use staging = 'pageable' to pin nothing");
  EXPECT_EQ(in_python_terms("staging_memory::pinned"), "'pinned'");
}

TEST(python_terms_test, AStatsFigureIsAnEntryOfLoaderStats) {
  EXPECT_EQ(in_python_terms("If the loader stalls (stats::stall_fraction()), input"),
            "If the loader stalls (loader.stats()['stall_fraction']), input");
  // Not a call, or part of a longer name: unchanged.
  EXPECT_EQ(in_python_terms("stats::stall_fraction is"), "stats::stall_fraction is");
  EXPECT_EQ(in_python_terms("gpufeed::stats::x()"), "gpufeed::stats::x()");
}

TEST(python_terms_test, TheFailuresOfABatchAreSampleErrorsList) {
  EXPECT_EQ(in_python_terms("2 samples of one batch failed (sample_error::failures() has each)"),
            "2 samples of one batch failed (SampleError.failures has each)");
}

TEST(python_terms_test, APreconditionsSourceLocationIsDropped) {
  EXPECT_EQ(in_python_terms("gpufeed: bad size [n > 0 failed at src/options.cpp:42]"),
            "gpufeed: bad size");
  // Brackets that are not a location stay.
  EXPECT_EQ(in_python_terms("shape [3, 4]"), "shape [3, 4]");
  EXPECT_EQ(in_python_terms("a [note] then text"), "a [note] then text");
}

TEST(python_terms_test, OtherTextIsUnchanged) {
  std::string const plain = "gpufeed: reading sample 7 (epoch 0, worker 1) failed: boom";
  EXPECT_EQ(in_python_terms(plain), plain);
  EXPECT_EQ(in_python_terms(""), "");
}

}  // namespace
