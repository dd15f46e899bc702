#pragma once
// Tokens of the fusion text format (the format is described in ir/printer.h), and located
// diagnostics: `source:line:col: error: ...`, the source line, and a caret under the column.
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ir/error.h"

namespace loom::text {

struct Loc {
  int line = 1, col = 1;  // 1-based; columns count bytes
};

enum class TokKind : uint8_t {
  Ident,    // [A-Za-z_][A-Za-z0-9_]*
  Number,   // digits, optional fraction and exponent, and any letters glued on (`1b`, `3x`)
  String,   // "..." with \" \\ \n \t escapes; text holds the unescaped contents
  Punct,    // one of : , = [ ] ( ) { } * / -
  Invalid,  // a character the format has no use for, or an unterminated string
  End,      // end of input
};

struct Token {
  TokKind kind = TokKind::End;
  std::string text;
  Loc loc;

  bool is(char c) const { return kind == TokKind::Punct && text[0] == c; }
  bool isIdent() const { return kind == TokKind::Ident; }
  bool isIdent(std::string_view s) const { return kind == TokKind::Ident && text == s; }
  // For `expected X, found Y`: "`text`", "end of input", ...
  std::string describe() const;
};

// Skips blanks and `#` comments; the result always ends with one End token.
std::vector<Token> tokenize(std::string_view text);

// The text being parsed and its name, for diagnostics.
class Source {
 public:
  Source(std::string_view text, std::string_view name) : text_(text), name_(name) {}
  std::string_view text() const { return text_; }
  const std::string& name() const { return name_; }
  // `name:line:col: error: message`, the source line, and a caret under `at`.
  std::string diagnostic(Loc at, const std::string& message) const;
  [[noreturn]] void error(Loc at, const std::string& message) const;

 private:
  std::string_view lineText(int line) const;
  std::string text_;
  std::string name_;
};

// A cursor over the tokens of one source, with the `expected X, found Y` helpers.
class TokenStream {
 public:
  TokenStream(std::string_view text, std::string_view source_name)
      : src_(text, source_name), toks_(tokenize(text)) {}

  const Token& peek(size_t k = 0) const { return toks_[std::min(pos_ + k, toks_.size() - 1)]; }
  const Token& next() {
    const Token& t = peek();
    if (pos_ + 1 < toks_.size()) ++pos_;
    return t;
  }
  bool accept(char c) {
    if (!peek().is(c)) return false;
    next();
    return true;
  }
  const Token& expect(char c) {
    if (!peek().is(c)) expected(std::string("`") + c + "`");
    return next();
  }
  const Token& expectIdent(std::string_view what) {
    if (!peek().isIdent()) expected(what);
    return next();
  }

  // `expected WHAT, found <the next token>`, located at the next token.
  [[noreturn]] void expected(std::string_view what) const {
    error(peek().loc, "expected " + std::string(what) + ", found " + peek().describe());
  }
  [[noreturn]] void error(Loc at, const std::string& message) const { src_.error(at, message); }

  // Runs `f` (a call into the IR, which knows nothing of source text); a loom::Error it throws
  // is rethrown located at `at`.
  template <typename F>
  decltype(auto) located(Loc at, F&& f) const {
    try {
      return f();
    } catch (const Error& e) {
      error(at, e.what());
    }
  }

 private:
  Source src_;
  std::vector<Token> toks_;
  size_t pos_ = 0;
};

}  // namespace loom::text
