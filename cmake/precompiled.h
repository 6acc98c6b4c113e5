// cmake/precompiled.h: the headers that most of the library's and the CLI's
// sources include, precompiled once per target (Note [Precompiled headers] in
// CMakeLists.txt). Only the standard library's and Eigen's: a project header
// here would rebuild every source when it changes, and hide a missing include
// of it.
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <random>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include <Eigen/Core>
