// The HTML report in a real browser: headless Chromium (Debian's `chromium` package) renders the
// report of a seed case; the DOM it builds must hold the verdict and one timeline row per rank,
// and its screenshot must be a real page (the verdict's red box, the timeline's markers), not a
// blank or error page. Skipped, with the reason, when no Chromium is installed.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#if defined(VIGIL_HAVE_ZLIB)
#include <zlib.h>
#endif

#include "diagnose/diagnose.h"

namespace vigil::diagnose {
namespace {

namespace fs = std::filesystem;

// $VIGIL_CHROMIUM, else the first of Debian's / Ubuntu's / Google's names on PATH.
std::string FindChromium() {
  if (const char* env = std::getenv("VIGIL_CHROMIUM"); env != nullptr && *env != '\0') return env;
  const char* path = std::getenv("PATH");
  if (path == nullptr) return {};
  std::stringstream dirs(path);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
      fs::path p = fs::path(dir) / name;
      if (!dir.empty() && ::access(p.c_str(), X_OK) == 0) return p.string();
    }
  }
  return {};
}

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/vigil_diag_html_XXXXXX";
    char* p = ::mkdtemp(tmpl);
    if (p != nullptr) path = p;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path.empty()) fs::remove_all(path, ec);
  }
};

std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs chromium headless on `url` with `extra` flags and a fresh profile; stdout goes to *out.
// Bounded by timeout(1): a browser that hangs fails the test instead of blocking the suite.
int RunChromium(const std::string& chromium, const std::string& profile, const std::string& extra,
                const std::string& url, std::string* out) {
  std::string cmd = "timeout -k 10 120 " + Quote(chromium) +
                    " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
                    "--disable-background-networking --disable-component-update --disable-sync "
                    "--user-data-dir=" + Quote(profile) + " " + extra + " " + Quote(url) + " 2>/dev/null";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return -1;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out->append(buf, n);
  int status = ::pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

size_t Count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

std::string HtmlEscape(std::string_view s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      default: o += c;
    }
  }
  return o;
}

uint32_t Be32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

struct Png {
  uint32_t width = 0, height = 0;
  int bpp = 0;                      // bytes per pixel (RGB 3 / RGBA 4); 0 when not decoded
  std::vector<unsigned char> rgb;   // unfiltered rows, bpp bytes per pixel
};

// Reads the PNG header, and with zlib decodes 8-bit RGB/RGBA non-interlaced images (what
// Chromium writes). Returns an error text, empty on success.
std::string ReadPng(const std::string& data, Png* png) {
  static const unsigned char kSig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (data.size() < 33 || std::memcmp(data.data(), kSig, 8) != 0) return "not a PNG";
  const auto* d = reinterpret_cast<const unsigned char*>(data.data());
  if (std::memcmp(d + 12, "IHDR", 4) != 0) return "no IHDR";
  png->width = Be32(d + 16);
  png->height = Be32(d + 20);
#if defined(VIGIL_HAVE_ZLIB)
  int depth = d[24], color = d[25], interlace = d[28];
  if (depth != 8 || (color != 2 && color != 6) || interlace != 0) return {};  // header checks only
  int bpp = color == 6 ? 4 : 3;
  std::string idat;
  for (size_t p = 8; p + 12 <= data.size();) {
    uint32_t len = Be32(d + p);
    if (p + 12 + len > data.size()) return "truncated chunk";
    if (std::memcmp(d + p + 4, "IDAT", 4) == 0) idat.append(data, p + 8, len);
    p += 12 + len;
  }
  size_t stride = static_cast<size_t>(png->width) * bpp;
  std::vector<unsigned char> raw((stride + 1) * png->height);
  uLongf raw_len = raw.size();
  if (uncompress(raw.data(), &raw_len, reinterpret_cast<const Bytef*>(idat.data()), idat.size()) != Z_OK ||
      raw_len != raw.size())
    return "cannot inflate IDAT";
  png->rgb.assign(stride * png->height, 0);
  for (uint32_t y = 0; y < png->height; ++y) {
    const unsigned char* in = &raw[y * (stride + 1)];
    unsigned char* row = &png->rgb[y * stride];
    const unsigned char* up = y > 0 ? &png->rgb[(y - 1) * stride] : nullptr;
    for (size_t x = 0; x < stride; ++x) {
      int a = x >= static_cast<size_t>(bpp) ? row[x - bpp] : 0;
      int b = up != nullptr ? up[x] : 0;
      int c = up != nullptr && x >= static_cast<size_t>(bpp) ? up[x - bpp] : 0;
      int pred = 0;
      switch (in[0]) {
        case 0: pred = 0; break;
        case 1: pred = a; break;
        case 2: pred = b; break;
        case 3: pred = (a + b) / 2; break;
        case 4: {
          int pa = std::abs(b - c), pb = std::abs(a - c), pc = std::abs(a + b - 2 * c);
          pred = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
          break;
        }
        default: return "bad filter";
      }
      row[x] = static_cast<unsigned char>(in[1 + x] + pred);
    }
  }
  png->bpp = bpp;
#endif
  return {};
}

TEST(DiagnoseHtmlChromium, VerdictAndOneTimelineRowPerRank) {
  const std::string chromium = FindChromium();
  if (chromium.empty())
    GTEST_SKIP() << "chromium not installed (Debian: apt-get install -y chromium, or set VIGIL_CHROMIUM): "
                    "the HTML report is not checked in a browser";
  TempDir tmp;
  ASSERT_FALSE(tmp.path.empty());

  DiagnoseOptions o;
  o.inputs = {std::string(VIGIL_DIAG_FIXTURES) + "/mismatch"};
  DiagnoseResult r = Diagnose(o);
  ASSERT_FALSE(r.findings.empty());
  const Finding& verdict = r.findings.front();
  ASSERT_EQ(verdict.fault, "op_mismatch");
  ASSERT_EQ(r.job.comms.size(), 1u);
  const Comm& comm = r.job.comms.front();
  ASSERT_EQ(comm.members.size(), 4u);
  const std::string page = tmp.path + "/report.html";
  {
    std::ofstream f(page);
    f << RenderHtml(r);
    ASSERT_TRUE(f.good());
  }
  const std::string url = "file://" + page;

  // The DOM Chromium built from the page.
  std::string dom;
  ASSERT_EQ(RunChromium(chromium, tmp.path + "/profile-dom", "--dump-dom", url, &dom), 0) << dom.substr(0, 2000);
  ASSERT_NE(dom.find("</html>"), std::string::npos) << dom.substr(0, 2000);
  EXPECT_NE(dom.find("class=\"verdict\" data-fault=\"op_mismatch\""), std::string::npos);
  EXPECT_NE(dom.find("Verdict: " + HtmlEscape(verdict.title)), std::string::npos) << verdict.title;
  EXPECT_NE(dom.find("<svg id=\"timeline\""), std::string::npos);
  EXPECT_EQ(Count(dom, "class=\"rank-lane\""), comm.members.size());
  for (const Member& m : comm.members)
    EXPECT_EQ(Count(dom, "class=\"rank-lane\" data-label=\"rank " + std::to_string(m.rank) + "\""), 1u)
        << "rank " << m.rank;

  // A screenshot of the rendered page.
  const std::string shot = tmp.path + "/report.png";
  std::string ignored;
  ASSERT_EQ(RunChromium(chromium, tmp.path + "/profile-shot",
                        "--hide-scrollbars --window-size=1280,1400 --screenshot=" + Quote(shot), url, &ignored),
            0);
  std::ifstream f(shot, std::ios::binary);
  ASSERT_TRUE(f.good()) << "no screenshot written";
  std::string png_bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  Png png;
  std::string err = ReadPng(png_bytes, &png);
  ASSERT_TRUE(err.empty()) << err;
  EXPECT_EQ(png.width, 1280u);
  EXPECT_EQ(png.height, 1400u);
  EXPECT_GT(png_bytes.size(), 20000u);  // a blank page compresses to a few hundred bytes
  if (png.bpp == 0) return;             // not decodable here (no zlib): header and size only
  // Pixels: enough ink, the verdict box's border red (#c0392b), and the timeline's init
  // markers blue (#2980b9).
  size_t ink = 0, red = 0, blue = 0;
  const size_t pixels = static_cast<size_t>(png.width) * png.height;
  auto near = [](int v, int want) { return std::abs(v - want) <= 24; };
  for (size_t i = 0; i < pixels; ++i) {
    const unsigned char* px = &png.rgb[i * png.bpp];
    if (px[0] < 235 || px[1] < 235 || px[2] < 235) ++ink;
    if (near(px[0], 0xc0) && near(px[1], 0x39) && near(px[2], 0x2b)) ++red;
    if (near(px[0], 0x29) && near(px[1], 0x80) && near(px[2], 0xb9)) ++blue;
  }
  EXPECT_GT(ink, pixels / 50) << "page looks blank";
  EXPECT_GT(red, 500u) << "no verdict box";
  EXPECT_GT(blue, 4u * 20) << "no timeline markers";
}

}  // namespace
}  // namespace vigil::diagnose
