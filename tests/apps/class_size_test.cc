// No class in lib/ grows past what one reader can hold: at most 45 member
// functions and 25 data members, and the Engine, which sequences its parts,
// at most 40 and 15. A class that outgrows this has parts with their own
// state waiting to be found. Reads every header under lib/ and counts, for
// each class (and each struct with member functions; a struct of fields
// alone is a record, exempt), the member functions declared in its body
// (constructors, destructors, operators and deleted functions aside; inline
// definitions count, static ones too) and its non-static data members.
// Reads files only; starts no process.

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace pstrain::testing::class_size {
namespace {

namespace fs = std::filesystem;

struct ClassSize {
  std::string name;  // qualified, without the project's namespace
  std::string file;
  int functions = 0;
  int data = 0;
  bool record = false;  // a struct without member functions
};

// The source without comments, preprocessor lines, string and character
// literals' contents, or attributes, as tokens: identifiers and numbers
// whole, `::` and `->` as one, every other character alone.
std::vector<std::string> Tokens(const std::string& src) {
  std::vector<std::string> out;
  bool line_start = true;
  for (size_t i = 0; i < src.size();) {
    const char c = src[i];
    const char n = i + 1 < src.size() ? src[i + 1] : '\0';
    if (c == '\n') {
      line_start = true;
      ++i;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (line_start && c == '#') {  // to the line's end, continued
      while (i < src.size() && (src[i] != '\n' || src[i - 1] == '\\'))
        ++i;
    } else if (c == '/' && n == '/') {
      i = src.find('\n', i);
      i = i == std::string::npos ? src.size() : i;
    } else if (c == '/' && n == '*') {
      i = src.find("*/", i + 2);
      i = i == std::string::npos ? src.size() : i + 2;
    } else if (c == '"' || c == '\'') {
      size_t j = i + 1;
      while (j < src.size() && src[j] != c)
        j += src[j] == '\\' ? 2 : 1;
      out.push_back(std::string(2, c));
      i = j + 1;
    } else if (c == '[' && n == '[') {  // an attribute
      i = src.find("]]", i);
      i = i == std::string::npos ? src.size() : i + 2;
    } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i;
      while (
          j < src.size() &&
          (std::isalnum(static_cast<unsigned char>(src[j])) || src[j] == '_'))
        ++j;
      out.push_back(src.substr(i, j - i));
      i = j;
    } else {
      const bool pair = (c == ':' && n == ':') || (c == '-' && n == '>');
      out.push_back(src.substr(i, pair ? 2 : 1));
      i += pair ? 2 : 1;
    }
    if (c != '\n' && !std::isspace(static_cast<unsigned char>(c)))
      line_start = false;
  }
  return out;
}

bool IsIdentifier(const std::string& t) {
  return !t.empty() &&
         (std::isalpha(static_cast<unsigned char>(t[0])) || t[0] == '_');
}

// The index past the bracket that closes the one at `open`.
size_t Close(const std::vector<std::string>& t, size_t open) {
  const std::string o = t[open];
  const std::string c = o == "(" ? ")" : o == "[" ? "]" : o == "<" ? ">" : "}";
  int depth = 0;
  for (size_t i = open; i < t.size(); ++i) {
    if (t[i] == o)
      ++depth;
    else if (t[i] == c && --depth == 0)
      return i + 1;
  }
  return t.size();
}

// `s` without a leading `template <...>`.
std::vector<std::string> NoTemplate(std::vector<std::string> s) {
  while (s.size() > 1 && s[0] == "template" && s[1] == "<")
    s.erase(s.begin(), s.begin() + Close(s, 1));
  return s;
}

// Where a member's parameter list opens: the first `(` outside template
// arguments and before any `=`, after a name (not `(*p)`, a pointer's
// declarator). npos for a data member.
size_t ParamsAt(const std::vector<std::string>& s) {
  static const std::set<std::string> kNotNames = {"decltype", "alignas",
                                                  "sizeof", "noexcept"};
  int angle = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == "operator") {  // its symbol may be `()`, `<`, `=`, ...
      size_t j = i + 1 < s.size() && s[i + 1] == "(" ? i + 3 : i + 1;
      while (j < s.size() && s[j] != "(")
        ++j;
      return j < s.size() ? j : std::string::npos;
    }
    if (s[i] == "<")
      ++angle;
    else if (s[i] == ">")
      --angle;
    else if (angle == 0 && (s[i] == "=" || s[i] == "{"))
      return std::string::npos;
    else if (s[i] == "(" && i > 0 && kNotNames.count(s[i - 1]))
      i = Close(s, i) - 1;
    else if (angle == 0 && s[i] == "(")
      return i + 1 < s.size() && (s[i + 1] == "*" || s[i + 1] == "&")
                 ? std::string::npos
                 : i;
  }
  return std::string::npos;
}

// What a finished member declaration `s` adds to its class `name`.
void Classify(std::vector<std::string> s, const std::string& name,
              ClassSize* size) {
  s = NoTemplate(std::move(s));
  static const std::set<std::string> kSkip = {
      "using", "typedef", "friend", "static_assert", "enum",
      "class", "struct",  "union",  "namespace"};
  if (s.empty() || kSkip.count(s[0]))
    return;
  const size_t params = ParamsAt(s);
  if (params != std::string::npos) {
    const auto head_end = s.begin() + params;
    const bool op = std::find(s.begin(), head_end, "operator") != head_end;
    const bool ctor = s[params - 1] == name;  // a destructor too: ~name
    const size_t after = Close(s, params);
    const bool deleted =
        after + 1 < s.size() && s[after] == "=" && s[after + 1] == "delete";
    if (!op && !ctor && !deleted)
      ++size->functions;
    return;
  }
  if (std::find(s.begin(), s.end(), "static") != s.end())
    return;
  // One per declarator: `int a_, b_ = 0;` is two.
  int depth = 0;
  ++size->data;
  for (const auto& t : s) {
    if (t == "(" || t == "[" || t == "{" || t == "<")
      ++depth;
    else if (t == ")" || t == "]" || t == "}" || t == ">")
      --depth;
    else if (t == "," && depth == 0)
      ++size->data;
  }
}

class Counter {
 public:
  Counter(std::vector<std::string> tokens, std::string file)
      : t_(std::move(tokens)), file_(std::move(file)) {}

  std::vector<ClassSize> Run() {
    Scope(0, t_.size(), "", nullptr);
    return found_;
  }

 private:
  // The declarations in [begin, end): a file's or a namespace's when
  // `size` is null, else the body of class `scope`, whose members it counts.
  void Scope(size_t begin, size_t end, const std::string& scope,
             ClassSize* size) {
    const std::string short_name = scope.substr(scope.rfind(':') + 1);
    std::vector<std::string> s;  // the declaration so far
    for (size_t i = begin; i < end; ++i) {
      const std::string& t = t_[i];
      if (t == ";") {
        if (size)
          Classify(s, short_name, size);
        s.clear();
      } else if (t == ":" && s.size() == 1 &&
                 (s[0] == "public" || s[0] == "private" ||
                  s[0] == "protected")) {
        s.clear();
      } else if (t == "(" || t == "[") {
        const size_t close = Close(t_, i);
        s.insert(s.end(), t_.begin() + i, t_.begin() + close);
        i = close - 1;
      } else if (t == "{") {
        i = Brace(i, end, scope, size, short_name, &s) - 1;
      } else {
        s.push_back(t);
      }
    }
  }

  // The brace group at `open` inside declaration *s; returns where the
  // scan goes on. Ends *s when the group was a function's body or a
  // namespace.
  size_t Brace(size_t open, size_t end, const std::string& scope,
               ClassSize* size, const std::string& short_name,
               std::vector<std::string>* s) {
    const size_t close = std::min(Close(t_, open), end);
    const std::vector<std::string> head = NoTemplate(*s);
    const std::string first = head.empty() ? "" : head[0];
    const std::string prefix = scope.empty() ? "" : scope + "::";
    if (first == "namespace") {
      std::string name;
      for (size_t k = 1; k < head.size(); ++k)
        name += head[k];
      Scope(open + 1, close - 1, prefix + name, nullptr);
      s->clear();
      return close;
    }
    if (first == "class" || first == "struct" || first == "union") {
      ClassSize nested;
      nested.name =
          head.size() > 1 && IsIdentifier(head[1]) && head[1] != "final"
              ? prefix + head[1]
              : prefix + "(anonymous)";
      nested.file = file_;
      Scope(open + 1, close - 1, nested.name, &nested);
      nested.record = first != "class" && nested.functions == 0;
      found_.push_back(nested);
      s->push_back("{}");
      return close;
    }
    if (first == "extern") {
      Scope(open + 1, close - 1, scope, size);
      s->clear();
      return close;
    }
    // A function's body, unless a constructor's initializer list is still
    // going (`X() : a_{1}, b_(2) {`: the body follows `)` or `}`).
    const size_t params = ParamsAt(*s);
    bool body = first != "enum" && params != std::string::npos;
    if (body) {
      const size_t after = Close(*s, params);
      const bool init_list = after < s->size() && (*s)[after] == ":";
      body = !init_list || s->back() == ")" || s->back() == "}";
    }
    if (!body) {  // an initializer, an enum's values
      s->push_back("{");
      s->push_back("}");
      return close;
    }
    if (size)
      Classify(*s, short_name, size);
    s->clear();
    return close;
  }

  std::vector<std::string> t_;
  std::string file_;
  std::vector<ClassSize> found_;
};

std::vector<ClassSize> Count(const std::string& src, const std::string& file) {
  auto sizes = Counter(Tokens(src), file).Run();
  for (auto& c : sizes) {
    if (c.name.rfind("pstrain::", 0) == 0)
      c.name.erase(0, 9);
  }
  return sizes;
}

const ClassSize* Find(const std::vector<ClassSize>& sizes,
                      const std::string& name) {
  for (const auto& c : sizes) {
    if (c.name == name)
      return &c;
  }
  return nullptr;
}

TEST(ClassSizeTest, CountsMembersOfATrickyHeader) {
  const std::string src = R"(#pragma once
#define PAIR(a, b) { a; b; }
namespace pstrain::a {
// class Fake { void NotCounted(); int not_counted_; };
/* struct Fake2 { void F(); }; */
template <typename T, class U = std::vector<int>>
class Tricky final : public Base<T> {
 public:
  struct Inner {  // has a function: counted
    int x = 1;
    void Run() { if (x) { x = 2; } }
  };
  enum class Kind { kA, kB };
  using Map = std::map<int, int>;
  Tricky() : a_{1}, b_(2) { Init(); }
  explicit Tricky(int a) : a_(a) {}
  Tricky(const Tricky&) = delete;
  Tricky& operator=(const Tricky&) = delete;
  ~Tricky() override;
  bool operator==(const Tricky& o) const { return a_ == o.a_; }
  explicit operator bool() const { return a_ != 0; }
  void Init() { for (int i = 0; i < 3; ++i) { a_ += i; } }
  template <typename Fn>
  auto Bind(Fn fn) -> decltype(fn()) { return fn(); }
  [[nodiscard]] virtual int Pure() const = 0;
  void Gone() = delete;
  static Tricky Make();
  char At() const noexcept { return "}{"[0] + '{'; }
  friend bool operator<(const Tricky&, const Tricky&) { return false; }

 private:
  int a_{0};
  int b_ = 0, c_ = 1;
  std::vector<int> v_ = {1, 2, 3};
  std::function<void(int)> cb_ = [](int x) { (void)x; };
  std::map<int, std::pair<int, int>> m_;
  void (*fn_)(int) = nullptr;
  static constexpr int kMax = 3;
  static int count_;
  decltype(kMax) copy_ = kMax;
  char buf_[4]{};
  Inner inner_;
};
struct Record { int a; std::string b = "{"; };
struct WithFn { int a; int Get() const { return a; } };
inline int Free() { struct Local { void F(); }; return 1; }
class Empty;
}  // namespace pstrain::a
)";
  const auto sizes = Count(src, "tricky.h");
  const ClassSize* tricky = Find(sizes, "a::Tricky");
  ASSERT_NE(tricky, nullptr);
  // Init, Bind, Pure, Make, At.
  EXPECT_EQ(tricky->functions, 5);
  // a_, b_, c_, v_, cb_, m_, fn_, copy_, buf_, inner_.
  EXPECT_EQ(tricky->data, 10);
  EXPECT_FALSE(tricky->record);
  const ClassSize* inner = Find(sizes, "a::Tricky::Inner");
  ASSERT_NE(inner, nullptr);
  EXPECT_EQ(inner->functions, 1);
  EXPECT_EQ(inner->data, 1);
  EXPECT_FALSE(inner->record);
  const ClassSize* record = Find(sizes, "a::Record");
  ASSERT_NE(record, nullptr);
  EXPECT_EQ(record->data, 2);
  EXPECT_TRUE(record->record);
  const ClassSize* with_fn = Find(sizes, "a::WithFn");
  ASSERT_NE(with_fn, nullptr);
  EXPECT_EQ(with_fn->functions, 1);
  EXPECT_EQ(with_fn->data, 1);
  EXPECT_FALSE(with_fn->record);
  // Comments and forward declarations name no class.
  EXPECT_EQ(sizes.size(), 4u);
}

struct Limit {
  int functions;
  int data;
};

// The sizes of every class in lib/'s headers.
std::vector<ClassSize> LibClasses() {
  const fs::path root = PSTRAIN_SOURCE_DIR;
  std::vector<ClassSize> all;
  for (const auto& e : fs::recursive_directory_iterator(root / "lib")) {
    if (!e.is_regular_file() || e.path().extension() != ".h")
      continue;
    std::ifstream in(e.path());
    std::ostringstream text;
    text << in.rdbuf();
    for (auto& c : Count(text.str(), fs::relative(e.path(), root).string()))
      all.push_back(std::move(c));
  }
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
    return a.functions + a.data != b.functions + b.data
               ? a.functions + a.data > b.functions + b.data
               : a.name < b.name;
  });
  return all;
}

TEST(ClassSizeTest, NoClassInLibIsTooLarge) {
  const auto all = LibClasses();
  // The scan sees the project's classes (a counter that found none would
  // pass anything).
  ASSERT_GT(all.size(), 100u);
  ASSERT_NE(Find(all, "ps::Engine"), nullptr);
  std::cout << "The largest classes (functions, data members):\n";
  int shown = 0;
  for (const auto& c : all) {
    if (c.record || shown++ >= 10)
      continue;
    std::cout << "  " << c.functions << " " << c.data << " " << c.name << " ("
              << c.file << ")\n";
  }
  for (const auto& c : all) {
    if (c.record)
      continue;
    const Limit limit = c.name == "ps::Engine" ? Limit{40, 15} : Limit{45, 25};
    EXPECT_LE(c.functions, limit.functions)
        << c.name << " (" << c.file << ") has " << c.functions
        << " member functions; at most " << limit.functions;
    EXPECT_LE(c.data, limit.data)
        << c.name << " (" << c.file << ") has " << c.data
        << " data members; at most " << limit.data;
  }
}

}  // namespace
}  // namespace pstrain::testing::class_size
