// libFuzzer target: any byte string given to the archive reader is either
// rejected with needle::Error or yields views that can be read end to end.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/error.h"
#include "io/cact_archive.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const needle::CactArchive a = needle::CactArchive::FromBytes(std::vector<uint8_t>(data, data + size));
    // Touch what a consumer touches: every float tensor and a row of every CQ tensor.
    float sink = 0.0f;
    for (size_t i = 0; i < a.num_tensors(); ++i) {
      const needle::TensorView v = a.tensor(i);
      if (v.spec->storage == needle::TensorStorage::kFloat) {
        for (float f : a.Floats(i)) sink += f;
      } else if (v.spec->storage == needle::TensorStorage::kQuantized) {
        const needle::CqMatrixView m = a.cq(i);
        std::vector<float> row(m.in);
        needle::CqDequantizeRow(m, m.rows - 1, row.data());
        sink += row[0];
      }
    }
    volatile float keep = sink;
    (void)keep;
  } catch (const needle::Error&) {
  }
  return 0;
}
