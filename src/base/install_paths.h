// Files an installed copy carries beside its executables: `cmake --install`
// puts them in PREFIX/share/needle/, and PREFIX/bin/needle finds them there,
// so an installed CLI never depends on the source tree it was built from.
#pragma once

#include <string>
#include <string_view>

namespace needle {

// PREFIX/share/needle/<relative> for the running executable PREFIX/bin/X, when
// that file or directory exists; empty otherwise (a build-tree binary).
std::string InstalledShareFile(std::string_view relative);

}  // namespace needle
