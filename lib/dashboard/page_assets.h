#pragma once
// The page's own files, lib/dashboard/dashboard.{html,js,css}, as compiled
// into the library by embed_assets.cmake (the generated page_assets.cc).
// Constant; thread-safe.

namespace pstrain::dashboard {

/// dashboard.html: the page, with @NAME@ placeholders that page.cc fills.
extern const char kDashboardHtml[];
/// dashboard.js: builds and updates the charts.
extern const char kDashboardJs[];
/// dashboard.css: the page's layout.
extern const char kDashboardCss[];

}  // namespace pstrain::dashboard
