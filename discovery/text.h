// The one way a probe-output parser in this folder reports an output it cannot use; the text
// helpers they share (line splitting, trimming, strict integers) are util/text.h's.
#pragma once

#include <string_view>

#include "util/result.h"
#include "util/text.h"

namespace cc::discovery {

/// The error every parser returns for an output it cannot use: the message names the command
/// as the operator would type it and what was wrong, e.g.
///   "`ibv_devinfo -v` output: line 7: port number \"x\" is not an integer".
/// The probe prefixes the host name. Exit code: ExitCode::kCheckFailed (the tool ran; a host
/// answered with something it cannot use).
util::Error parse_error(std::string_view command, std::string_view what);

using util::blank;
using util::excerpt;
using util::parse_int;
using util::parse_u64;
using util::split_lines;
using util::split_words;
using util::trim;

}  // namespace cc::discovery
