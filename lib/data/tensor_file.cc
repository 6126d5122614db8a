#include "data/tensor_file.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <utility>

#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/import_read.h>
#include <torch/torch.h>

#include "data/source_util.h"

namespace pstrain::data {
namespace {

constexpr char kSaveCall[] = "torch.save({\"x\": X, \"y\": Y}, ...)";
constexpr char kExpectedX[] = "expected a floating tensor [N, ...]";
constexpr char kExpectedY[] =
    "expected int64 [N] (class labels) or a floating tensor [N, ...] "
    "(regression targets)";

// "[100, 5]".
std::string ShapeString(c10::IntArrayRef sizes) {
  std::string out = "[";
  for (size_t i = 0; i < sizes.size(); ++i)
    out += (i ? ", " : "") + std::to_string(sizes[i]);
  return out + "]";
}

// Python's name for a dtype: "float32", "int64".
std::string DtypeName(c10::ScalarType type) {
  switch (type) {
    case c10::kFloat:
      return "float32";
    case c10::kDouble:
      return "float64";
    case c10::kHalf:
      return "float16";
    case c10::kBFloat16:
      return "bfloat16";
    case c10::kLong:
      return "int64";
    case c10::kInt:
      return "int32";
    case c10::kShort:
      return "int16";
    case c10::kChar:
      return "int8";
    case c10::kByte:
      return "uint8";
    case c10::kBool:
      return "bool";
    case c10::kComplexFloat:
      return "complex64";
    case c10::kComplexDouble:
      return "complex128";
    default:
      return c10::toString(type);
  }
}

// "int64 [100, 5]".
std::string Describe(const torch::Tensor& t) {
  return DtypeName(t.scalar_type()) + " " + ShapeString(t.sizes());
}

// What a loaded value is: "a tensor float64 [7, 3]", "a list of 2".
std::string DescribeValue(const c10::IValue& v) {
  if (v.isTensor())
    return "a tensor " + Describe(v.toTensor());
  if (v.isList())
    return "a list of " + std::to_string(v.toListRef().size());
  if (v.isTuple())
    return "a tuple of " + std::to_string(v.toTupleRef().elements().size());
  if (v.isGenericDict())
    return "a dict";
  if (v.isString())
    return "a str";
  if (v.isInt())
    return "an int";
  if (v.isDouble())
    return "a float";
  if (v.isBool())
    return "a bool";
  if (v.isNone())
    return "None";
  return std::string("a ") + v.tagKind();
}

// "\"y\", \"extra\", 1", or "none".
std::string DescribeKeys(const c10::impl::GenericDict& dict) {
  std::string out;
  for (const auto& entry : dict) {
    const c10::IValue& key = entry.key();
    out += out.empty() ? "" : ", ";
    if (key.isString())
      out += "\"" + key.toStringRef() + "\"";
    else if (key.isInt())
      out += std::to_string(key.toInt());
    else
      out += DescribeValue(key);
  }
  return out.empty() ? "none" : out;
}

// The first line of a libtorch error, each byte outside printable ASCII
// written "\xNN": the reason may quote the file's bytes.
std::string FirstLine(const std::string& what) {
  std::string out;
  for (const char c : what.substr(0, what.find('\n'))) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f) {
      out += c;
      continue;
    }
    char hex[5];
    std::snprintf(hex, sizeof(hex), "\\x%02x", byte);
    out += hex;
  }
  return out;
}

// What torch.save wrote at `path`, its tensors on the CPU. This is
// torch::pickle_load's own path (readArchiveAndTensors on the "data"
// archive) with map_location="cpu", reading the file in place rather than
// from a copy in memory.
Result<c10::IValue> Load(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    const int err = errno;
    if (err == ENOENT) {
      return NotFound(path + " not found; write it in Python with " +
                      kSaveCall);
    }
    return IOError(path + ": " + std::strerror(err));
  }
  std::fclose(f);
  std::string why;
  try {
    caffe2::serialize::PyTorchStreamReader reader(path);
    return torch::jit::readArchiveAndTensors(
        "data", /*pickle_prefix=*/"", /*tensor_prefix=*/"",
        /*type_resolver=*/c10::nullopt, /*obj_loader=*/c10::nullopt,
        c10::Device(c10::kCPU), reader);
  } catch (const c10::Error& e) {
    why = FirstLine(e.what_without_backtrace());
  } catch (const std::exception& e) {
    why = FirstLine(e.what());
  }
  return Corruption(path + ": not a torch.save file: " + why);
}

// dict[key], or kCorruption naming the keys the dict has.
Result<c10::IValue> Member(const std::string& path,
                           const c10::impl::GenericDict& dict,
                           const std::string& key) {
  const auto it = dict.find(c10::IValue(key));
  if (it == dict.end()) {
    return Corruption(path + ": no key \"" + key + "\" in the dict (keys: " +
                      DescribeKeys(dict) + "); expected " + kSaveCall);
  }
  return it->value();
}

// `t` detached, contiguous, in a storage of its own size (a saved view
// brings its whole base storage).
torch::Tensor Compact(torch::Tensor t) {
  t = t.detach().contiguous();
  if (t.storage_offset() != 0 || t.storage().nbytes() != t.nbytes())
    t = t.clone();
  return t;
}

// X as float32, or kCorruption.
Result<torch::Tensor> CheckX(const std::string& path, const c10::IValue& v) {
  if (!v.isTensor())
    return Corruption(path + ": x is " + DescribeValue(v) + "; " + kExpectedX);
  const torch::Tensor& x = v.toTensor();
  if (!c10::isFloatingType(x.scalar_type()) || x.dim() == 0)
    return Corruption(path + ": x is " + Describe(x) + "; " + kExpectedX);
  return Compact(x.to(torch::kFloat32));
}

// Y as int64 [N] or float32 [N, ...], or kCorruption.
Result<torch::Tensor> CheckY(const std::string& path, const c10::IValue& v) {
  if (!v.isTensor())
    return Corruption(path + ": y is " + DescribeValue(v) + "; " + kExpectedY);
  const torch::Tensor& y = v.toTensor();
  if (y.scalar_type() == torch::kInt64 && y.dim() == 1)
    return Compact(y);
  if (c10::isFloatingType(y.scalar_type()) && y.dim() >= 1)
    return Compact(y.to(torch::kFloat32));
  return Corruption(path + ": y is " + Describe(y) + "; " + kExpectedY);
}

// max(y) + 1 for labels y (0 when empty); 0 for float y. kCorruption for a
// negative label.
Result<int64_t> NumClasses(const std::string& path, const torch::Tensor& y) {
  if (y.scalar_type() != torch::kInt64)
    return int64_t{0};
  const int64_t* labels = y.data_ptr<int64_t>();
  int64_t max = -1;
  for (int64_t i = 0; i < y.numel(); ++i) {
    if (labels[i] < 0) {
      return Corruption(path + ": y[" + std::to_string(i) + "] is " +
                        std::to_string(labels[i]) +
                        "; expected class labels >= 0");
    }
    max = std::max(max, labels[i]);
  }
  return max + 1;
}

}  // namespace

Result<std::unique_ptr<TensorFile>> TensorFile::Open(
    const SourceOptions& options, Split split) {
  if (options.data_dir.empty()) {
    return InvalidArgument(
        std::string("--dataset tensors needs --data_dir DIR holding train.pt "
                    "and test.pt (") +
        kSaveCall + ")");
  }
  const std::string path = internal::JoinPath(
      options.data_dir, split == Split::kTrain ? "train.pt" : "test.pt");
  PS_ASSIGN_OR_RETURN(c10::IValue saved, Load(path));
  if (!saved.isGenericDict()) {
    return Corruption(path + ": holds " + DescribeValue(saved) +
                      ", not a dict; expected " + kSaveCall);
  }
  const c10::impl::GenericDict dict = saved.toGenericDict();
  PS_ASSIGN_OR_RETURN(c10::IValue x_value, Member(path, dict, "x"));
  PS_ASSIGN_OR_RETURN(c10::IValue y_value, Member(path, dict, "y"));
  PS_ASSIGN_OR_RETURN(torch::Tensor x, CheckX(path, x_value));
  PS_ASSIGN_OR_RETURN(torch::Tensor y, CheckY(path, y_value));
  if (x.size(0) != y.size(0)) {
    return Corruption(path + ": x has " + std::to_string(x.size(0)) +
                      " samples (" + ShapeString(x.sizes()) + ") and y " +
                      std::to_string(y.size(0)) + " (" +
                      ShapeString(y.sizes()) + "); expected the same N");
  }
  PS_ASSIGN_OR_RETURN(int64_t num_classes, NumClasses(path, y));
  return std::unique_ptr<TensorFile>(
      new TensorFile(std::move(x), std::move(y), num_classes));
}

TensorFile::TensorFile(torch::Tensor x, torch::Tensor y, int64_t num_classes)
    : x_(std::move(x)), y_(std::move(y)), num_classes_(num_classes) {}

int64_t TensorFile::size() const {
  return x_.size(0);
}

SourceShape TensorFile::shape() const {
  if (x_.dim() == 4)
    return {x_.size(1), x_.size(2), x_.size(3), num_classes_};
  int64_t channels = 1;
  for (int64_t d : x_shape())
    channels *= d;
  return {channels, 1, 1, num_classes_};
}

Batch TensorFile::Get(const torch::Tensor& indices, int64_t) const {
  const torch::Tensor idx = internal::CheckedIndices(indices, size());
  Batch batch;
  batch.images = x_.index_select(0, idx);
  batch.labels = y_.index_select(0, idx);
  return batch;
}

std::vector<int64_t> TensorFile::x_shape() const {
  return x_.sizes().slice(1).vec();
}

std::vector<int64_t> TensorFile::y_shape() const {
  return y_.sizes().slice(1).vec();
}

bool TensorFile::y_is_float() const {
  return y_.scalar_type() == torch::kFloat32;
}

}  // namespace pstrain::data
