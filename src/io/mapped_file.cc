#include "io/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "base/error.h"

namespace needle {

MappedFile MappedFile::Map(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(ErrorCode::kIo, "cannot open '" + path + "': " + std::strerror(errno));
  struct stat st{};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(ErrorCode::kIo, "'" + path + "' is not a regular file");
  }
  MappedFile f;
  f.size_ = static_cast<size_t>(st.st_size);
  if (f.size_ > 0) {
    void* p = ::mmap(nullptr, f.size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int e = errno;
      ::close(fd);
      throw Error(ErrorCode::kIo, "cannot map '" + path + "': " + std::strerror(e));
    }
    f.data_ = static_cast<const uint8_t*>(p);
    f.mapped_ = true;
  }
  ::close(fd);
  return f;
}

MappedFile MappedFile::Own(std::vector<uint8_t> bytes) {
  MappedFile f;
  f.owned_ = std::move(bytes);
  f.data_ = f.owned_.data();
  f.size_ = f.owned_.size();
  return f;
}

MappedFile MappedFile::Borrow(std::span<const uint8_t> bytes) {
  MappedFile f;
  f.data_ = bytes.data();
  f.size_ = bytes.size();
  f.borrowed_ = true;
  return f;
}

MappedFile::MappedFile(MappedFile&& o) noexcept { *this = std::move(o); }

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  if (this != &o) {
    Release();
    mapped_ = o.mapped_;
    borrowed_ = o.borrowed_;
    size_ = o.size_;
    owned_ = std::move(o.owned_);
    data_ = mapped_ || borrowed_ ? o.data_ : owned_.data();
    o.data_ = nullptr, o.size_ = 0, o.mapped_ = false, o.borrowed_ = false;
  }
  return *this;
}

MappedFile::~MappedFile() { Release(); }

void MappedFile::Release() {
  if (mapped_ && data_) ::munmap(const_cast<uint8_t*>(data_), size_);
  data_ = nullptr, size_ = 0, mapped_ = false, borrowed_ = false;
  owned_.clear();
}

}  // namespace needle
