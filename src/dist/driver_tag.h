// Names that say which driver process owns them, so `sluice gc` can tell a live query's shuffle
// folder from one whose driver died (a killed `sluice query` cannot remove its own).
//
// A tag is "<host>.<pid>.<start>": a hash of the host name, the driver's pid, and the process's
// start time in clock ticks (which tells a reused pid apart).
#pragma once

#include <string>
#include <string_view>

namespace sluice::dist {

/// This process's tag.
const std::string& DriverTag();

enum class TagOwner {
  kAlive,      // the driver runs, on this host
  kGone,       // on this host, and no process with that pid and start time runs
  kElsewhere,  // another host's driver: cannot tell from here
  kMalformed,  // not a tag
};

TagOwner OwnerOf(std::string_view tag);

}  // namespace sluice::dist
