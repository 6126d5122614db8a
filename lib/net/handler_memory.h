#pragma once
// Handler memory and buffer views for Asio operations, so that a connection's
// steady-state reads and writes allocate nothing. Each HandlerMemory serves one
// outstanding operation at a time (a connection has at most one read and one
// write in flight); a request while it is in use, or larger than its block,
// falls back to the heap. This is the pattern of Asio's own "allocation"
// example. Not thread-safe: used from the io_context's thread.

#include <cstddef>
#include <new>
#include <vector>

namespace pstrain::net {

class HandlerMemory {
 public:
  HandlerMemory() = default;
  HandlerMemory(const HandlerMemory&) = delete;
  HandlerMemory& operator=(const HandlerMemory&) = delete;

  void* Allocate(std::size_t size) {
    if (!in_use_ && size <= sizeof(storage_)) {
      in_use_ = true;
      return &storage_;
    }
    return ::operator new(size);
  }
  void Deallocate(void* p) {
    if (p == &storage_) {
      in_use_ = false;
    } else {
      ::operator delete(p);
    }
  }

 private:
  alignas(std::max_align_t) unsigned char storage_[1024];
  bool in_use_ = false;
};

/// A standard allocator over one HandlerMemory, for asio::bind_allocator.
/// `*memory` must outlive every operation that uses the allocator.
template <typename T>
class HandlerAllocator {
 public:
  using value_type = T;

  explicit HandlerAllocator(HandlerMemory* memory) : memory_(memory) {}
  template <typename U>
  HandlerAllocator(const HandlerAllocator<U>& other) noexcept  // NOLINT
      : memory_(other.memory_) {}

  T* allocate(std::size_t n) {
    return static_cast<T*>(memory_->Allocate(sizeof(T) * n));
  }
  void deallocate(T* p, std::size_t) { memory_->Deallocate(p); }

  bool operator==(const HandlerAllocator& o) const {
    return memory_ == o.memory_;
  }
  bool operator!=(const HandlerAllocator& o) const {
    return memory_ != o.memory_;
  }

 private:
  template <typename>
  friend class HandlerAllocator;
  HandlerMemory* memory_;
};

/// A non-owning view of a vector of Asio buffers, for async_read/async_write,
/// which copy the buffer sequence they are given: a view copies in O(1) and
/// without allocating. The vector must outlive the operation, unchanged.
template <typename Buffer>
class BufferView {
 public:
  explicit BufferView(const std::vector<Buffer>& v)
      : begin_(v.data()), end_(v.data() + v.size()) {}
  BufferView(const Buffer* begin, const Buffer* end)
      : begin_(begin), end_(end) {}
  const Buffer* begin() const { return begin_; }
  const Buffer* end() const { return end_; }

 private:
  const Buffer* begin_;
  const Buffer* end_;
};

}  // namespace pstrain::net
