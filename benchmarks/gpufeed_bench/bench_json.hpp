#pragma once
// The JSON type of every report: ordered, so files keep the schema's field order.

#include <nlohmann/json.hpp>

namespace gpufeed::bench {

using json = nlohmann::ordered_json;

}  // namespace gpufeed::bench
