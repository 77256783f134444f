#include "discovery/fix_command.h"

#include <fmt/format.h>

#include "remote/quote.h"

namespace cc::discovery {
namespace {

// " WORDS", or "" for none: words joined to a command line.
std::string spaced_words(std::string_view w) {
  return w.empty() ? std::string() : " " + std::string(w);
}

}  // namespace

std::string FixCommand::command(std::string_view subcommand, std::string_view extra) const {
  const std::string cluster = !state_file.empty() ? remote::shell_quote_arg(state_file)
                              : !hosts.empty()    ? "--hosts " + remote::shell_quote_arg(hosts)
                                                  : "";
  return fmt::format("clusterctl {}{}{}{}", subcommand, spaced_words(global), spaced_words(cluster),
                     spaced_words(extra));
}

std::string FixCommand::rediscover() const {
  std::string line = "clusterctl" + spaced_words(global) + " discover";
  if (!hosts.empty()) line += " --hosts " + remote::shell_quote_arg(hosts);
  if (!state_file.empty()) line += " -o " + remote::shell_quote_arg(state_file);
  return line;
}

std::string FixCommand::collect(std::string_view host) const {
  return fmt::format("clusterctl{} collect --hosts {} -o {}", spaced_words(global),
                     remote::shell_quote_arg(host), remote::shell_quote_arg(std::string(host) + "-bundle"));
}

std::string FixCommand::ssh(std::string_view host) const {
  const auto it = ssh_destinations.find(std::string(host));
  const std::string_view destination = it != ssh_destinations.end() ? it->second : host;
  return "ssh" + spaced_words(ssh_options) + " " + remote::shell_quote_arg(destination);
}

}  // namespace cc::discovery
