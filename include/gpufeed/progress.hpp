#pragma once
/// @file
/// @brief Kept so that existing includes still build: the progress line moved to
/// `gpufeed/observe/progress.hpp`, in the CMake target `gpufeed::observe` (link it, not only
/// `gpufeed::gpufeed`).

#include "gpufeed/observe/progress.hpp"
