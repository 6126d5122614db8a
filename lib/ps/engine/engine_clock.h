#pragma once
// The Engine's names for a connection and for time. A PeerId names one
// connection, from Engine::OnAccept to Engine::OnClose; ids are never
// reused. The Engine has no clock: the time comes in with every input.

#include <chrono>
#include <cstdint>

namespace pstrain::ps {

using PeerId = uint64_t;
/// The engine's notion of time: passed in with every input, never read.
using EngineClock = std::chrono::steady_clock;
using Time = EngineClock::time_point;

}  // namespace pstrain::ps
