// The chat web UI's static files (web/ in the source tree), embedded in the
// binary at build time by cmake/embed_files.cmake, so `tessera serve` needs no
// files beside it and no network.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace tessera::webui {

// One embedded file: its path under web/ (e.g. "app.js") and its bytes (static storage).
struct EmbeddedFile {
  std::string_view path;
  std::string_view data;
};

// Defined in the generated web_assets_data.cc.
extern const EmbeddedFile kEmbeddedAssets[];
extern const size_t kEmbeddedAssetCount;

// A file to answer an HTTP GET with.
struct WebAsset {
  std::string_view data;
  std::string_view content_type;
};

// The asset served at URL path `path`: "/" is index.html, "/webui/NAME" is
// web/NAME; nullopt for any other path (and for index.html under /webui/).
std::optional<WebAsset> find_web_asset(std::string_view path);

// The Content-Type for a file name, from its extension (application/octet-stream when unknown).
std::string_view content_type_for(std::string_view name);

}  // namespace tessera::webui
