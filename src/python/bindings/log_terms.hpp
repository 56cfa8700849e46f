#pragma once
// The library logs in C++ terms (`loader_options::held_batches_budget`), as its exceptions
// speak; in a Python process its log lines reach a Python user, who sets the DataLoader's
// arguments instead.

namespace gpufeed::python {

/// Routes gpufeed's log lines through in_python_terms() (python_terms.hpp) before its sinks
/// write them. Called once, at import, before any loader exists; a second call changes nothing.
void log_in_python_terms();

}  // namespace gpufeed::python
