#pragma once
/// @file
/// @brief Kept so that existing includes still build: the system monitor moved to
/// `gpufeed/observe/monitor.hpp`, in the CMake target `gpufeed::observe` (link it, not only
/// `gpufeed::gpufeed`).

#include "gpufeed/observe/monitor.hpp"
