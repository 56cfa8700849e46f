#pragma once
/// @file
/// @brief Everything in `gpufeed::observe` (the CMake target of the same name, which links
/// `gpufeed::gpufeed`): the system monitor, the progress line, and the /proc and thread readers
/// they are made of. Linux only; NVML is loaded at run time, never linked.

#include "gpufeed/observe/monitor.hpp"
#include "gpufeed/observe/proc_stat.hpp"
#include "gpufeed/observe/process.hpp"
#include "gpufeed/observe/progress.hpp"
