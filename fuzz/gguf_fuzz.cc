// libFuzzer target for the GGUF reader: any input must parse or fail with a
// Status, never crash or read out of bounds. On success every tensor's first
// and last byte is read (ASan checks they lie inside the input), every
// metadata value is printed, and the metadata is written back with
// GgufWriter and parsed again, which must succeed with the same keys and
// types (general.alignment becomes uint32 with the alignment written).
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "formats/gguf_reader.h"
#include "formats/gguf_writer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using tessera::GgufFile;
  const tessera::Result<GgufFile> r = GgufFile::parse(data, size, "fuzz");
  if (!r.ok()) return 0;

  volatile uint8_t sink = 0;
  for (const tessera::GgufTensorInfo& t : r->tensors()) {
    if (t.data < data || t.n_bytes > size || t.data + t.n_bytes > data + size) std::abort();
    if (t.n_bytes > 0) {
      sink = static_cast<uint8_t>(sink + t.data[0]);
      sink = static_cast<uint8_t>(sink + t.data[t.n_bytes - 1]);
    }
    if (r->find_tensor(t.name) != &t) std::abort();
  }

  tessera::GgufWriter w;
  for (const tessera::GgufKeyValue& kv : r->metadata()) {
    sink = static_cast<uint8_t>(sink + kv.value.to_string().size());
    if (r->find(kv.key) != &kv.value) std::abort();
    w.add_value(kv.key, kv.value);
  }
  // The input's alignment, unless it is so large that the padding alone would
  // take the fuzzer's memory (a valid 2^30 took 10 s of byte-wise padding;
  // tessera's own writers use the default 32).
  const auto alignment = static_cast<uint32_t>(r->alignment() <= 4096 ? r->alignment() : 32);
  const auto bytes = w.to_bytes(alignment);
  if (!bytes.ok()) std::abort();
  const tessera::Result<GgufFile> again = GgufFile::parse(bytes->data(), bytes->size(), "fuzz-rewrite");
  if (!again.ok() || again->metadata().size() < r->metadata().size()) std::abort();
  for (const tessera::GgufKeyValue& kv : r->metadata()) {
    const tessera::GgufValue* v = again->find(kv.key);
    if (v == nullptr) std::abort();
    // The writer stores general.alignment as the spec's uint32 with the
    // alignment it used, whatever integer type the input had (the reader
    // accepts any).
    if (kv.key == "general.alignment" ? (v->type != tessera::GgufType::kUint32 || v->as_int() != alignment)
                                      : v->type != kv.value.type) {
      std::abort();
    }
  }
  (void)sink;
  return 0;
}
