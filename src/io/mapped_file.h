// Read-only bytes of a model: a memory-mapped file, or an owned copy of a
// caller's buffer (needle_load). Move-only: the mapping is never copied by accident.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace needle {

class MappedFile {
 public:
  MappedFile() = default;
  static MappedFile Map(const std::string& path);  // throws Error(kIo)
  static MappedFile Own(std::vector<uint8_t> bytes);
  // Bytes that outlive the object (e.g. a model embedded in the library image): no copy.
  static MappedFile Borrow(std::span<const uint8_t> bytes);
  MappedFile(MappedFile&& o) noexcept;
  MappedFile& operator=(MappedFile&& o) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const uint8_t> bytes() const { return {data_, size_}; }

 private:
  void Release();
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;       // munmap on release
  bool borrowed_ = false;     // someone else's bytes
  std::vector<uint8_t> owned_;  // or: the bytes live here
};

}  // namespace needle
