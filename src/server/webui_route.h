// GET / and GET /webui/*: the chat web UI (src/webui/, files from web/). Open
// without the API key: the page itself asks for the key when the API answers
// 401. Off with `tessera serve --no-webui` (ServerConfig::webui).
#pragma once

#include <optional>
#include <string_view>

#include "server/simple_routes.h"

namespace tessera::server {

// The page or asset at `path` when the web UI is on and `method` is GET; nullopt otherwise.
std::optional<Reply> handle_webui_route(std::string_view method, std::string_view path, const ServerConfig& config);

}  // namespace tessera::server
